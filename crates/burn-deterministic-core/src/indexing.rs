//! The keys of an indexing op — which row of its source each index reads (or each value adds
//! into) — checked on the host, where a bad index can still be named.
//!
//! The front doors read the index tensor once (it is needed for the [`PairwisePlan`] anyway),
//! so an index outside its dimension is refused here with the op, the index and the size,
//! instead of reaching a kernel that may clamp it or read out of bounds.
//!
//! [`PairwisePlan`]: crate::PairwisePlan

use core::fmt;

/// An index tensor the fixed-order indexing ops refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexError {
    /// An index outside `0..size` of the dimension it indexes (negative included).
    OutOfRange {
        /// The op (`"gather"`, `"select"`, ...).
        op: &'static str,
        /// The index.
        index: i64,
        /// The dimension it indexes.
        dim: usize,
        /// That dimension's size.
        size: usize,
    },
    /// Shapes that do not fit together (as Burn's own check would say).
    Shape {
        /// The op.
        op: &'static str,
        /// What does not fit.
        detail: String,
    },
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutOfRange {
                op,
                index,
                dim,
                size,
            } => write!(
                f,
                "burn-deterministic {op}: index {index} is out of range for dimension {dim} of \
                 size {size}"
            ),
            Self::Shape { op, detail } => write!(f, "burn-deterministic {op}: {detail}"),
        }
    }
}

impl std::error::Error for IndexError {}

fn checked(op: &'static str, index: i64, dim: usize, size: usize) -> Result<usize, IndexError> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < size)
        .ok_or(IndexError::OutOfRange {
            op,
            index,
            dim,
            size,
        })
}

/// The rows an index list reads along a dimension of size `size` (`select`, `select_assign`):
/// each index, checked.
pub fn row_keys(
    op: &'static str,
    indices: &[i64],
    dim: usize,
    size: usize,
) -> Result<Vec<usize>, IndexError> {
    indices
        .iter()
        .map(|&index| checked(op, index, dim, size))
        .collect()
}

/// The flat element each index of a `gather`/`scatter` along `dim` reads or adds into:
/// `indices` (row-major, shape `index_shape`) index dimension `dim` of a tensor of shape
/// `shape`; every other dimension of the two shapes must agree, as Burn requires.
pub fn element_keys(
    op: &'static str,
    shape: &[usize],
    dim: usize,
    index_shape: &[usize],
    indices: &[i64],
) -> Result<Vec<usize>, IndexError> {
    let shape_error = |detail: String| IndexError::Shape { op, detail };
    if dim >= shape.len() || index_shape.len() != shape.len() {
        return Err(shape_error(format!(
            "dimension {dim} of a {shape:?} tensor with {index_shape:?} indices"
        )));
    }
    if let Some(other) = (0..shape.len()).find(|&d| d != dim && shape[d] != index_shape[d]) {
        return Err(shape_error(format!(
            "the indices' shape {index_shape:?} differs from the tensor's {shape:?} at \
             dimension {other} (only dimension {dim} may differ)"
        )));
    }
    let inner: usize = shape[dim + 1..].iter().product();
    let (size, count) = (shape[dim], index_shape[dim]);
    indices
        .iter()
        .enumerate()
        .map(|(position, &index)| {
            let index = checked(op, index, dim, size)?;
            let (outer, rest) = (position / (count * inner), position % inner);
            Ok((outer * size + index) * inner + rest)
        })
        .collect()
}

/// The row of the leading `k = tuples.len() / count` dimensions of a tensor of shape `shape`
/// that each index tuple of a `gather_nd`/`scatter_nd` names (row-major over those dimensions).
pub fn tuple_keys(
    op: &'static str,
    shape: &[usize],
    tuples: &[i64],
    k: usize,
) -> Result<Vec<usize>, IndexError> {
    if k == 0 || k > shape.len() {
        return Err(IndexError::Shape {
            op,
            detail: format!("index tuples of length {k} for a {shape:?} tensor"),
        });
    }
    tuples
        .chunks(k)
        .map(|tuple| {
            tuple.iter().enumerate().try_fold(0, |row, (dim, &index)| {
                Ok(row * shape[dim] + checked(op, index, dim, shape[dim])?)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_keys_follow_row_major_order_along_any_dimension() {
        // A [2, 3, 2] tensor gathered along dim 1 with [2, 2, 2] indices.
        let indices = [0, 2, 1, 1, 2, 0, 0, 0];
        let keys = element_keys("gather", &[2, 3, 2], 1, &[2, 2, 2], &indices).unwrap();
        // Position (a, m, b) reads (a, idx, b) = a*6 + idx*2 + b.
        assert_eq!(keys, [0, 5, 2, 3, 10, 7, 6, 7]);
    }

    #[test]
    fn bad_indices_and_shapes_are_named() {
        let error = element_keys("gather", &[4], 0, &[2], &[1, 4]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "burn-deterministic gather: index 4 is out of range for dimension 0 of size 4"
        );
        assert!(matches!(
            row_keys("select", &[-1], 1, 3),
            Err(IndexError::OutOfRange { index: -1, .. })
        ));
        assert!(matches!(
            element_keys("scatter", &[2, 3], 0, &[2, 2], &[0; 4]),
            Err(IndexError::Shape { .. })
        ));
        assert_eq!(
            tuple_keys("gather_nd", &[3, 4, 5], &[2, 1, 0, 3], 2),
            Ok(vec![9, 3])
        );
        assert!(tuple_keys("gather_nd", &[3, 4], &[0, 4], 2).is_err());
    }
}
