// positions of tests/stablehlo_models.py: jax.jit(f).lower(*args).as_text(), jax 0.12.0.1
module @jit_positions attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x3xf32>) -> (tensor<6x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.iota dim = 0 : tensor<6xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<6xf32>) -> tensor<6x1xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<6x1xf32>) -> tensor<6x3xf32>
    %3 = stablehlo.add %arg0, %2 : tensor<6x3xf32>
    return %3 : tensor<6x3xf32>
  }
}
