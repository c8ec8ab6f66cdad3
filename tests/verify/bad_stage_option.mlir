// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s9}' 2>&1 | FileCheck %s

// An unknown stage is rejected when the pass is created.

// CHECK: bad stage 's9' (expected one of s1..s5)
module {
}
