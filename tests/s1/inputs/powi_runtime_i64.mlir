func.func @runtime_i64(%x: f32, %n: i64) -> f32 {
  %r = math.fpowi %x, %n : f32, i64
  return %r : f32
}
