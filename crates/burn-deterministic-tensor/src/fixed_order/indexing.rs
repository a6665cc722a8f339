//! Burn 0.22's float indexing ops whose sums meet in one fixed order on every device.
//!
//! Burn 0.22.1's CubeCL backends scatter-add floats with one atomic add per value wherever the
//! device adds floats atomically (every GPU, and Vulkan on the CPU), so a float `scatter` with
//! `Add`, and the backward of `gather` (a scatter-add of the output gradient), change their
//! last bits from run to run as soon as an index repeats; its `scatter_nd` adds without an
//! atomic at all and can lose updates. These functions give Burn's results through a
//! [`PairwisePlan`]: each key's values are added as a binary tree of passes in which no place
//! receives more than two values, which any scatter computes with the same bits
//! ([`burn_deterministic_core::PairwisePlan`] says why). The forward of the gathers is Burn's,
//! bit for bit (a copy); sums are pairwise, within a few roundings of Burn's sequential sum.
//!
//! `select` and `select_assign` are served the same way although Burn 0.22.1 adds their sums in
//! order already (one unit per column walks the indices): the promise is then this crate's,
//! not an accident of one Burn release, and the sums are spread over the whole device instead
//! of one unit per column.
//!
//! Cost: the indices are read to the host once per call (to build the plan and check every
//! index: an index out of range is an [`IndexError`], never a silent read elsewhere), and the
//! values move through `⌈log₂ m⌉ + 2` gathers or scatters, `m` the largest count of one index.

use super::rows::{gather_rows, scatter_add_rows};
use crate::report::Rewrite;
use burn::tensor::{AsIndex, IndexingUpdateOp, Int, Tensor};
use burn_deterministic_core::{element_keys, row_keys, tuple_keys, IndexError, PairwisePlan};

/// `tensor.gather(dim, indices)`, with a gradient whose sums meet in one fixed order.
///
/// ```rust
/// use burn::tensor::{Device, Int, Tensor};
/// use burn_deterministic_tensor::fixed_order;
///
/// let device = Device::flex().autodiff();
/// let x = Tensor::<2>::from_data([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], &device).require_grad();
/// let indices = Tensor::<2, Int>::from_data([[2, 2, 0], [1, 1, 1]], &device);
/// let y = fixed_order::gather(x.clone(), 1, indices);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), [3.0, 3.0, 1.0, 5.0, 5.0, 5.0]);
/// let grads = y.sum().backward();
/// let dx = x.grad(&grads).unwrap();
/// assert_eq!(dx.to_data().to_vec::<f32>().unwrap(), [1.0, 0.0, 2.0, 0.0, 3.0, 0.0]);
/// ```
///
/// # Panics
///
/// Where [`try_gather`] returns an error, with its message.
pub fn gather<const D: usize>(
    tensor: Tensor<D>,
    dim: impl AsIndex,
    indices: Tensor<D, Int>,
) -> Tensor<D> {
    try_gather(tensor, dim, indices).unwrap_or_else(|error| panic!("{error}"))
}

/// [`gather`], with an index out of range or mismatched shapes returned as an error before any
/// kernel runs.
pub fn try_gather<const D: usize>(
    tensor: Tensor<D>,
    dim: impl AsIndex,
    indices: Tensor<D, Int>,
) -> Result<Tensor<D>, IndexError> {
    let dim = dim_index("gather", dim, D)?;
    let (shape, index_shape) = (tensor.dims(), indices.dims());
    let keys = element_keys("gather", &shape, dim, &index_shape, &host(indices))?;
    if keys.is_empty() {
        return Ok(Tensor::zeros(
            index_shape,
            (&tensor.device(), tensor.dtype()),
        ));
    }
    let plan = PairwisePlan::new(&keys);
    crate::report::record(&tensor.device(), Rewrite::PairwiseGather);
    Ok(gather_rows(tensor.reshape([-1, 1]), &plan).reshape(index_shape))
}

/// `tensor.select(dim, indices)`, with a gradient whose sums meet in one fixed order.
///
/// ```rust
/// use burn::tensor::{Device, Int, Tensor};
/// use burn_deterministic_tensor::fixed_order;
///
/// let device = Device::flex().autodiff();
/// let table = Tensor::<2>::from_data([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], &device).require_grad();
/// let tokens = Tensor::<1, Int>::from_data([2, 0, 2, 2], &device);
/// let rows = fixed_order::select(table.clone(), 0, tokens);
/// assert_eq!(rows.dims(), [4, 2]);
/// let grads = rows.sum().backward();
/// let d_table = table.grad(&grads).unwrap();
/// assert_eq!(d_table.to_data().to_vec::<f32>().unwrap(), [1.0, 1.0, 0.0, 0.0, 3.0, 3.0]);
/// ```
///
/// # Panics
///
/// Where [`try_select`] returns an error, with its message.
pub fn select<const D: usize>(
    tensor: Tensor<D>,
    dim: impl AsIndex,
    indices: Tensor<1, Int>,
) -> Tensor<D> {
    try_select(tensor, dim, indices).unwrap_or_else(|error| panic!("{error}"))
}

/// [`select`], with an index out of range returned as an error before any kernel runs.
pub fn try_select<const D: usize>(
    tensor: Tensor<D>,
    dim: impl AsIndex,
    indices: Tensor<1, Int>,
) -> Result<Tensor<D>, IndexError> {
    let dim = dim_index("select", dim, D)?;
    let shape = tensor.dims();
    let keys = row_keys("select", &host(indices), dim, shape[dim])?;
    let mut out_shape = shape;
    out_shape[dim] = keys.len();
    if keys.is_empty() {
        return Ok(Tensor::zeros(out_shape, (&tensor.device(), tensor.dtype())));
    }
    let plan = PairwisePlan::new(&keys);
    crate::report::record(&tensor.device(), Rewrite::PairwiseGather);
    let rows = gather_rows(rows_along(tensor, dim), &plan);
    Ok(from_rows(rows, dim, out_shape))
}

/// `tensor.scatter(dim, indices, values, update)`; with `Add`, each target's values are added
/// in one fixed order, and so is the gradient. Other updates are Burn's (they do not add).
///
/// ```rust
/// use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor};
/// use burn_deterministic_tensor::fixed_order;
///
/// let device = Device::flex();
/// let bins = Tensor::<1>::zeros([3], &device);
/// let indices = Tensor::<1, Int>::from_data([0, 2, 2, 0, 2], &device);
/// let values = Tensor::<1>::from_data([1.0, 2.0, 3.0, 4.0, 5.0], &device);
/// let sums = fixed_order::scatter(bins, 0, indices, values, IndexingUpdateOp::Add);
/// assert_eq!(sums.to_data().to_vec::<f32>().unwrap(), [5.0, 0.0, 10.0]);
/// ```
///
/// # Panics
///
/// Where [`try_scatter`] returns an error, with its message.
pub fn scatter<const D: usize>(
    tensor: Tensor<D>,
    dim: impl AsIndex,
    indices: Tensor<D, Int>,
    values: Tensor<D>,
    update: IndexingUpdateOp,
) -> Tensor<D> {
    try_scatter(tensor, dim, indices, values, update).unwrap_or_else(|error| panic!("{error}"))
}

/// [`scatter`], with an index out of range or mismatched shapes returned as an error before
/// any kernel runs.
pub fn try_scatter<const D: usize>(
    tensor: Tensor<D>,
    dim: impl AsIndex,
    indices: Tensor<D, Int>,
    values: Tensor<D>,
    update: IndexingUpdateOp,
) -> Result<Tensor<D>, IndexError> {
    let dim = dim_index("scatter", dim, D)?;
    let (shape, index_shape) = (tensor.dims(), indices.dims());
    same_shape("scatter", &index_shape, &values.dims())?;
    if !matches!(update, IndexingUpdateOp::Add) {
        element_keys("scatter", &shape, dim, &index_shape, &host(indices.clone()))?;
        return Ok(tensor.scatter(dim, indices, values, update));
    }
    let keys = element_keys("scatter", &shape, dim, &index_shape, &host(indices))?;
    if keys.is_empty() {
        return Ok(tensor);
    }
    let plan = PairwisePlan::new(&keys);
    crate::report::record(&tensor.device(), Rewrite::PairwiseScatterAdd);
    let flat = scatter_add_rows(tensor.reshape([-1, 1]), &plan, values.reshape([-1, 1]));
    Ok(flat.reshape(shape))
}

/// `tensor.select_assign(dim, indices, values, update)`; with `Add`, each row's values are
/// added in one fixed order. Other updates are Burn's.
///
/// # Panics
///
/// Where [`try_select_assign`] returns an error, with its message.
pub fn select_assign<const D: usize>(
    tensor: Tensor<D>,
    dim: impl AsIndex,
    indices: Tensor<1, Int>,
    values: Tensor<D>,
    update: IndexingUpdateOp,
) -> Tensor<D> {
    try_select_assign(tensor, dim, indices, values, update)
        .unwrap_or_else(|error| panic!("{error}"))
}

/// [`select_assign`], with an index out of range or mismatched shapes returned as an error
/// before any kernel runs.
pub fn try_select_assign<const D: usize>(
    tensor: Tensor<D>,
    dim: impl AsIndex,
    indices: Tensor<1, Int>,
    values: Tensor<D>,
    update: IndexingUpdateOp,
) -> Result<Tensor<D>, IndexError> {
    let dim = dim_index("select_assign", dim, D)?;
    let shape = tensor.dims();
    let keys = row_keys("select_assign", &host(indices.clone()), dim, shape[dim])?;
    let mut expected = shape;
    expected[dim] = keys.len();
    same_shape("select_assign", &expected, &values.dims())?;
    if !matches!(update, IndexingUpdateOp::Add) {
        return Ok(tensor.select_assign(dim, indices, values, update));
    }
    if keys.is_empty() {
        return Ok(tensor);
    }
    let plan = PairwisePlan::new(&keys);
    crate::report::record(&tensor.device(), Rewrite::PairwiseScatterAdd);
    let rows = scatter_add_rows(rows_along(tensor, dim), &plan, rows_along(values, dim));
    Ok(from_rows(rows, dim, shape))
}

/// `tensor.gather_nd(indices)`: the slices of `tensor` at the index tuples (the last axis of
/// `indices`, of length `K`, indexes the leading `K` dimensions), with a gradient whose sums
/// meet in one fixed order. Burn 0.22.1's CubeCL backward of `gather_nd` can lose updates.
///
/// # Panics
///
/// Where [`try_gather_nd`] returns an error, with its message.
pub fn gather_nd<const D: usize, const M: usize, const DV: usize>(
    tensor: Tensor<D>,
    indices: Tensor<M, Int>,
) -> Tensor<DV> {
    try_gather_nd(tensor, indices).unwrap_or_else(|error| panic!("{error}"))
}

/// [`gather_nd`], with an index out of range or mismatched ranks returned as an error before
/// any kernel runs.
pub fn try_gather_nd<const D: usize, const M: usize, const DV: usize>(
    tensor: Tensor<D>,
    indices: Tensor<M, Int>,
) -> Result<Tensor<DV>, IndexError> {
    let (shape, index_shape) = (tensor.dims(), indices.dims());
    let k = index_shape[M - 1];
    let keys = tuple_keys("gather_nd", &shape, &host(indices), k)?;
    let out_shape: Vec<usize> = index_shape[..M - 1]
        .iter()
        .chain(&shape[k.min(D)..])
        .copied()
        .collect();
    if out_shape.len() != DV {
        return Err(IndexError::Shape {
            op: "gather_nd",
            detail: format!(
                "the output has rank {} ({out_shape:?}), not {DV}",
                out_shape.len()
            ),
        });
    }
    let out_shape: [usize; DV] = out_shape.try_into().expect("rank checked");
    if keys.is_empty() {
        return Ok(Tensor::zeros(out_shape, (&tensor.device(), tensor.dtype())));
    }
    let width: usize = shape[k..].iter().product();
    let plan = PairwisePlan::new(&keys);
    crate::report::record(&tensor.device(), Rewrite::PairwiseGather);
    Ok(gather_rows(tensor.reshape([-1, width as i64]), &plan).reshape(out_shape))
}

/// `tensor.scatter_nd(indices, values, update)`; with `Add`, each slice's values are added in
/// one fixed order and none is lost (Burn 0.22.1's CubeCL `scatter_nd` adds without an atomic
/// and can lose updates that share a tuple). Other updates are Burn's.
///
/// # Panics
///
/// Where [`try_scatter_nd`] returns an error, with its message.
pub fn scatter_nd<const D: usize, const M: usize, const DV: usize>(
    tensor: Tensor<D>,
    indices: Tensor<M, Int>,
    values: Tensor<DV>,
    update: IndexingUpdateOp,
) -> Tensor<D> {
    try_scatter_nd(tensor, indices, values, update).unwrap_or_else(|error| panic!("{error}"))
}

/// [`scatter_nd`], with an index out of range or mismatched shapes returned as an error before
/// any kernel runs.
pub fn try_scatter_nd<const D: usize, const M: usize, const DV: usize>(
    tensor: Tensor<D>,
    indices: Tensor<M, Int>,
    values: Tensor<DV>,
    update: IndexingUpdateOp,
) -> Result<Tensor<D>, IndexError> {
    let (shape, index_shape) = (tensor.dims(), indices.dims());
    let k = index_shape[M - 1];
    let keys = tuple_keys("scatter_nd", &shape, &host(indices.clone()), k)?;
    let expected: Vec<usize> = index_shape[..M - 1]
        .iter()
        .chain(&shape[k..])
        .copied()
        .collect();
    same_shape("scatter_nd", &expected, &values.dims())?;
    if !matches!(update, IndexingUpdateOp::Add) {
        return Ok(tensor.scatter_nd(indices, values, update));
    }
    if keys.is_empty() {
        return Ok(tensor);
    }
    let width: usize = shape[k..].iter().product();
    let plan = PairwisePlan::new(&keys);
    crate::report::record(&tensor.device(), Rewrite::PairwiseScatterAdd);
    let rows = scatter_add_rows(
        tensor.reshape([-1, width as i64]),
        &plan,
        values.reshape([-1, width as i64]),
    );
    Ok(rows.reshape(shape))
}

/// The index tensor's values on the host (the one read of the indices per call).
fn host<const D: usize>(indices: Tensor<D, Int>) -> Vec<i64> {
    indices.into_data().iter::<i64>().collect()
}

fn dim_index(op: &'static str, dim: impl AsIndex, rank: usize) -> Result<usize, IndexError> {
    dim.try_dim_index(rank).map_err(|error| IndexError::Shape {
        op,
        detail: format!("{error:?}"),
    })
}

fn same_shape(op: &'static str, expected: &[usize], values: &[usize]) -> Result<(), IndexError> {
    if expected == values {
        Ok(())
    } else {
        Err(IndexError::Shape {
            op,
            detail: format!("the values' shape {values:?} is not {expected:?}"),
        })
    }
}

/// `tensor` as rows along `dim`: `[size of dim, everything else]` (dimension `dim` moved first).
fn rows_along<const D: usize>(tensor: Tensor<D>, dim: usize) -> Tensor<2> {
    let rows = tensor.dims()[dim];
    tensor.swap_dims(0, dim).reshape([rows as i64, -1])
}

/// The inverse of [`rows_along`] for a tensor of shape `shape`.
fn from_rows<const D: usize>(rows: Tensor<2>, dim: usize, shape: [usize; D]) -> Tensor<D> {
    let mut swapped = shape;
    swapped.swap(0, dim);
    rows.reshape(swapped).swap_dims(0, dim)
}
