//! `scatter_nd` with repeated index tuples, applied in rounds of distinct targets.
//!
//! CubeCL's `scatter_nd` runs one thread per update with a plain read-modify-write, so two
//! updates of one element race: one is lost, and which one varies. The rewrite reads the index
//! tuples to the host, numbers each tuple's occurrences, and calls `B`'s own `scatter_nd` once
//! per occurrence number: round `r` holds every tuple's `r`-th update, so no round has a
//! repeated target and updates apply in index order (for `Assign`, the last one wins; for `Add`,
//! `((d + v₀) + v₁) + …`). Without repeated tuples it is one native call.

use burn_backend::{read_sync, Backend, Shape, TensorData, TensorMetadata};
use std::collections::HashMap;

/// Rows of the flattened `[updates, K]` index tensor, grouped by occurrence number of their
/// tuple: `rounds[r]` lists (ascending) the rows holding some tuple's `r`-th occurrence.
pub(crate) fn rounds(tuples: &[i64], k: usize) -> Vec<Vec<usize>> {
    let mut seen: HashMap<&[i64], usize> = HashMap::new();
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (row, tuple) in tuples.chunks(k.max(1)).enumerate() {
        let occurrence = seen.entry(tuple).or_insert(0);
        if *occurrence == rounds.len() {
            rounds.push(Vec::new());
        }
        rounds[*occurrence].push(row);
        *occurrence += 1;
    }
    rounds
}

/// The ops `scatter_nd` needs from one tensor kind (float or int) of `B`.
pub(crate) trait ScatterNd<B: Backend> {
    type Tensor: TensorMetadata + Clone;
    fn reshape(tensor: Self::Tensor, shape: Shape) -> Self::Tensor;
    fn select_rows(tensor: Self::Tensor, rows: B::IntTensorPrimitive) -> Self::Tensor;
    fn scatter_nd(
        data: Self::Tensor,
        indices: B::IntTensorPrimitive,
        values: Self::Tensor,
        reduction: burn_backend::tensor::IndexingUpdateOp,
    ) -> Self::Tensor;
}

/// `scatter_nd(data, indices, values, reduction)` with updates applied in index order.
pub(crate) fn in_rounds<B: Backend, K: ScatterNd<B>>(
    data: K::Tensor,
    indices: B::IntTensorPrimitive,
    values: K::Tensor,
    reduction: burn_backend::tensor::IndexingUpdateOp,
) -> K::Tensor {
    let index_shape = indices.shape().to_vec();
    let (&k, batch) = index_shape
        .split_last()
        .expect("scatter_nd indices have a last dim");
    let updates: usize = batch.iter().product();
    let data_rank = data.shape().num_dims();
    if updates < 2 || k == 0 || k > data_rank {
        return K::scatter_nd(data, indices, values, reduction);
    }
    let host = read_sync(B::int_into_data(indices.clone()))
        .expect("burn-deterministic scatter_nd: reading the index tuples");
    let tuples: Vec<i64> = host.iter::<i64>().collect();
    let rounds = rounds(&tuples, k);
    if rounds.len() < 2 {
        return K::scatter_nd(data, indices, values, reduction);
    }
    let device = B::int_device(&indices);
    let index_dtype = indices.dtype();
    let indices = B::int_reshape(indices, Shape::new([updates, k]));
    let value_shape = values.shape().to_vec();
    let mut flat_values = vec![updates];
    flat_values.extend_from_slice(&value_shape[batch.len()..]);
    let values = K::reshape(values, Shape::from(flat_values));
    rounds.into_iter().fold(data, |data, rows| {
        let count = rows.len();
        let rows: Vec<i64> = rows.into_iter().map(|r| r as i64).collect();
        let rows = TensorData::new(rows, [count]).convert_dtype(index_dtype);
        let rows = B::int_from_data(rows, &device);
        let round_indices = B::int_select(indices.clone(), 0, rows.clone());
        let round_values = K::select_rows(values.clone(), rows);
        K::scatter_nd(data, round_indices, round_values, reduction)
    })
}

/// Float tensors of `B`.
pub(crate) struct Float;
/// Int tensors of `B`.
pub(crate) struct Int;

impl<B: Backend> ScatterNd<B> for Float {
    type Tensor = B::FloatTensorPrimitive;
    fn reshape(tensor: Self::Tensor, shape: Shape) -> Self::Tensor {
        B::float_reshape(tensor, shape)
    }
    fn select_rows(tensor: Self::Tensor, rows: B::IntTensorPrimitive) -> Self::Tensor {
        B::float_select(tensor, 0, rows)
    }
    fn scatter_nd(
        data: Self::Tensor,
        indices: B::IntTensorPrimitive,
        values: Self::Tensor,
        reduction: burn_backend::tensor::IndexingUpdateOp,
    ) -> Self::Tensor {
        B::float_scatter_nd(data, indices, values, reduction)
    }
}

impl<B: Backend> ScatterNd<B> for Int {
    type Tensor = B::IntTensorPrimitive;
    fn reshape(tensor: Self::Tensor, shape: Shape) -> Self::Tensor {
        B::int_reshape(tensor, shape)
    }
    fn select_rows(tensor: Self::Tensor, rows: B::IntTensorPrimitive) -> Self::Tensor {
        B::int_select(tensor, 0, rows)
    }
    fn scatter_nd(
        data: Self::Tensor,
        indices: B::IntTensorPrimitive,
        values: Self::Tensor,
        reduction: burn_backend::tensor::IndexingUpdateOp,
    ) -> Self::Tensor {
        B::int_scatter_nd(data, indices, values, reduction)
    }
}

#[cfg(test)]
mod tests {
    use super::rounds;

    #[test]
    fn rounds_hold_distinct_tuples_in_occurrence_order() {
        // Tuples (k = 2): a, b, a, c, a, b
        let tuples = [0, 1, 2, 3, 0, 1, 4, 4, 0, 1, 2, 3];
        assert_eq!(rounds(&tuples, 2), vec![vec![0, 1, 3], vec![2, 5], vec![4]]);
    }

    #[test]
    fn distinct_tuples_make_one_round() {
        assert_eq!(rounds(&[5, 6, 7], 1), vec![vec![0, 1, 2]]);
    }
}
