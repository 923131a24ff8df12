// Hand-written: a reshape to a shape tensor built from JAX's dim argument b (as
// jax.export lowers x.reshape(b, 2, 2)); arg1's ? is unified with b by the element count.
func.func @main(%arg0: tensor<i32> {jax.global_constant = "b"}, %arg1: tensor<?x4xf32>) -> tensor<?x2x2xf32> {
  %s = stablehlo.constant dense<[2, 2]> : tensor<2xi32>
  %r = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
  %sh = stablehlo.concatenate %r, %s, dim = 0 : (tensor<1xi32>, tensor<2xi32>) -> tensor<3xi32>
  %0 = stablehlo.dynamic_reshape %arg1, %sh : (tensor<?x4xf32>, tensor<3xi32>) -> tensor<?x2x2xf32>
  return %0 : tensor<?x2x2xf32>
}
