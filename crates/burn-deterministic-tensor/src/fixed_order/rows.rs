//! A [`PairwisePlan`] run on the rows of a `[rows, width]` tensor with Burn's own `gather` and
//! float `scatter` (`Add`): the two directions of one linear map, each the other's autodiff.
//!
//! Every pass is a `gather` (a copy: fixed) or a `scatter` that adds at most two values into
//! any place of a zero tensor, which gives the same bits in any order (`a + b = b + a`), so the
//! passes may use Burn's atomic scatter on CubeCL. Autodiff of a pass is the other kind of
//! pass over the same indices, so the backward keeps the property too: of `gather_rows`, each
//! root's gradient is the sum of its leaves' gradients in the plan's tree; of
//! `scatter_add_rows`, the values' gradient is a gather.

use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor, TensorData};
use burn_deterministic_core::PairwisePlan;

/// `rows` as gather/scatter indices along dim 0 of a `[_, width]` tensor (one index per row,
/// broadcast across the width, not copied).
fn row_indices(rows: &[usize], width: usize, device: &Device) -> Tensor<2, Int> {
    let rows_i64: Vec<i64> = rows.iter().map(|&row| row as i64).collect();
    Tensor::<2, Int>::from_data(TensorData::new(rows_i64, [rows.len(), 1]), device)
        .expand([rows.len(), width])
}

/// Row `i` of the result is row `keys[i]` of `source`, for the keys the plan was built from:
/// Burn's `select(0, keys)`, bit for bit, computed so that its gradient adds each source row's
/// contributions in the plan's pairwise order.
pub(crate) fn gather_rows(source: Tensor<2>, plan: &PairwisePlan) -> Tensor<2> {
    let [_, width] = source.dims();
    let device = source.device();
    let roots = source.gather(0, row_indices(plan.root_keys(), width, &device));
    let offsets = plan.root_offsets();
    // From the roots down: level k is its nodes with parents, read from level k + 1, then its
    // roots.
    let mut upper: Option<Tensor<2>> = None;
    for (level, &offset) in plan.levels().iter().zip(&offsets).rev() {
        let mut parts = Vec::with_capacity(2);
        if let Some(upper) = upper.take() {
            parts.push(upper.gather(0, row_indices(&level.parents, width, &device)));
        }
        if level.roots() > 0 {
            parts.push(roots.clone().narrow(0, offset, level.roots()));
        }
        upper = Some(concat(parts));
    }
    let leaves = upper.expect("a plan has a level");
    if plan.leaves_in_order() {
        leaves
    } else {
        leaves.gather(0, row_indices(&plan.leaf_positions(), width, &device))
    }
}

/// `target` with row `keys[i]` of it increased by row `i` of `values`, each target row's values
/// added in the plan's pairwise order, then onto the target row.
pub(crate) fn scatter_add_rows(
    target: Tensor<2>,
    plan: &PairwisePlan,
    values: Tensor<2>,
) -> Tensor<2> {
    let [_, width] = values.dims();
    let (device, dtype) = (values.device(), values.dtype());
    let mut level_values = if plan.leaves_in_order() {
        values
    } else {
        values.gather(0, row_indices(plan.leaf_order(), width, &device))
    };
    let levels = plan.levels();
    let mut roots = Vec::with_capacity(levels.len());
    for (index, level) in levels.iter().enumerate() {
        let with_parents = level.parents.len();
        if level.roots() > 0 {
            roots.push(level_values.clone().narrow(0, with_parents, level.roots()));
        }
        if with_parents > 0 {
            let next = Tensor::<2>::zeros([levels[index + 1].nodes, width], (&device, dtype));
            level_values = next.scatter(
                0,
                row_indices(&level.parents, width, &device),
                level_values.narrow(0, 0, with_parents),
                IndexingUpdateOp::Add,
            );
        }
    }
    // One value per distinct key: each target row receives one add.
    target.scatter(
        0,
        row_indices(plan.root_keys(), width, &device),
        concat(roots),
        IndexingUpdateOp::Add,
    )
}

fn concat(mut parts: Vec<Tensor<2>>) -> Tensor<2> {
    if parts.len() == 1 {
        parts.pop().expect("one part")
    } else {
        Tensor::cat(parts, 0)
    }
}
