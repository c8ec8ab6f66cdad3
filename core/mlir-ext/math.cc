// Thin C wrapper of MLIR's math approximation patterns (see pbc-ext/math.h).
#include "pbc-ext/math.h"

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

bool pbcExtMathApproximate(MlirOperation op, const char *const *ops, int n) {
  Operation *root = unwrap(op);
  RewritePatternSet patterns(root->getContext());
  if (n == 0) {
    populateMathPolynomialApproximationPatterns(patterns);
  } else {
    // MLIR passes op names ("math.tanh"); ops[] holds mnemonics.
    auto named = [&](StringRef name) {
      name.consume_front("math.");
      for (int i = 0; i < n; ++i)
        if (name == ops[i])
          return true;
      return false;
    };
    populateMathF32ExpansionPatterns(patterns, named);
    populateMathPolynomialApproximationPatterns(patterns, named);
  }
  return succeeded(applyPatternsGreedily(root, std::move(patterns)));
}
