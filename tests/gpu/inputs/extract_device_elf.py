"""extract_device_elf.py LIB PREFIX: writes every AMDGPU code object (an ELF
with e_machine 224) embedded in a pbc-compiled library LIB to PREFIX.N and
prints their paths, so llvm-objdump can disassemble the binaries the runtime
will load."""
import struct
import sys

EM_AMDGPU = 224

data = open(sys.argv[1], "rb").read()
paths = []
at = data.find(b"\x7fELF", 1)
while at >= 0:
    machine = struct.unpack_from("<H", data, at + 18)[0]
    if data[at + 4] == 2 and machine == EM_AMDGPU:  # 64-bit AMDGPU object
        shoff, = struct.unpack_from("<Q", data, at + 40)
        shentsize, shnum = struct.unpack_from("<HH", data, at + 58)
        path = "%s.%d" % (sys.argv[2], len(paths))
        open(path, "wb").write(data[at:at + shoff + shentsize * shnum])
        paths.append(path)
    at = data.find(b"\x7fELF", at + 1)
if not paths:
    sys.exit("no AMDGPU code object in %s" % sys.argv[1])
print(" ".join(paths))
