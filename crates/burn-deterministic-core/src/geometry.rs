//! Band geometry, on the host only: which inputs each block of outputs reads, how the blocks
//! and their windows are laid out, and where the windows can be views of a zero-padded input.
//! No tensor here: a front door's device application follows what this decides, and the cost
//! model ([`crate::Cost`]) counts it.
//!
//! A banded matrix `M: [rows, columns]` is split into `K` blocks of `block` rows; block `k`
//! multiplies only a window of `width` consecutive columns, the columns its rows' taps touch, so
//! work and memory grow with `taps × size` instead of `size²`. The forward of an axis uses the
//! band of `W` (blocks of outputs, each reading the inputs under it); the adjoint the band of
//! `Wᵀ` (blocks of inputs, each reading the outputs that touch them): no scatter anywhere.

use core::ops::Range;

/// How an axis map is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// One `out × in` matrix: one GEMM per axis.
    Dense,
    /// Blocks of at most `block_size` outputs. `block_size: 1` keeps windows exact (see
    /// [`BandShape::exact`]).
    Banded {
        /// Outputs per block (≥ 1).
        block_size: usize,
    },
}

/// The geometry of a band of a `[rows, columns]` matrix, given each block's column support.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandShape {
    /// Rows of the banded matrix.
    pub rows: usize,
    /// Columns of the banded matrix.
    pub columns: usize,
    /// Rows per block; the last block may run past `rows` (zero weights, sliced off).
    pub block: usize,
    /// Number of blocks.
    pub blocks: usize,
    /// Columns per window: the widest block support, or the uniform windows' width.
    pub width: usize,
    /// Each window's first column; negative (or windows running past `columns`) only with
    /// `stride`, where those positions read zero padding.
    pub starts: Vec<isize>,
    /// Windows hold exactly their block's support: positions past it read an all-zero row
    /// appended to the input instead of a neighbouring column, so that a non-finite value
    /// reaches only the outputs whose taps touch it (`0 · NaN` would be NaN).
    pub exact: bool,
    /// Each block's support, for the exact windows.
    pub supports: Vec<Range<usize>>,
    /// Set when the windows start at a uniform step: then they are views of the zero-padded
    /// input (`unfold`), with no gather at all.
    pub stride: Option<Stride>,
}

/// Uniform windows: window `k` covers columns `k · step − pad_before ..` of the input, which is
/// cut to its first `used` columns (the rest are read by no row) and zero-padded by
/// `pad_before` and `pad_after`, so that the padded length is `(blocks − 1) · step + width`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stride {
    /// Columns between the starts of two neighbouring windows.
    pub step: usize,
    /// Zero columns before the input.
    pub pad_before: usize,
    /// Input columns read by some row.
    pub used: usize,
    /// Zero columns after the used input.
    pub pad_after: usize,
}

impl Stride {
    /// Uniform windows holding every block's support, if they are at most 1/8 wider than the
    /// widest support (`width`): the step is the mean distance between the first and the last
    /// block's start. Empty supports (blocks read by nothing) fit anywhere.
    fn fit(supports: &[Range<usize>], columns: usize, width: usize) -> Option<(Self, usize)> {
        let placed: Vec<(usize, &Range<usize>)> = supports
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .collect();
        let (first, last) = (placed.first()?, placed.last()?);
        let step = if last.0 > first.0 {
            let distance = (last.1.start - first.1.start) as f64 / (last.0 - first.0) as f64;
            (distance.round() as usize).max(1)
        } else {
            1
        };
        let pad_before = placed
            .iter()
            .map(|(k, s)| (k * step).saturating_sub(s.start))
            .max()?;
        let uniform_width = placed
            .iter()
            .map(|(k, s)| s.end + pad_before - k * step)
            .max()?;
        if uniform_width * 8 > width * 9 {
            return None;
        }
        let padded = (supports.len() - 1) * step + uniform_width;
        let used = columns.min(padded - pad_before);
        let stride = Stride {
            step,
            pad_before,
            used,
            pad_after: padded - pad_before - used,
        };
        Some((stride, uniform_width))
    }

    /// The input's length once cut and padded.
    pub fn padded(&self) -> usize {
        self.pad_before + self.used + self.pad_after
    }
}

impl BandShape {
    /// `block_size` is an upper bound: the rows are split into equal blocks so that the last
    /// one wastes as few rows as possible. `uniform` allows uniform windows (see [`Stride`]).
    pub fn new(
        rows: usize,
        columns: usize,
        block_size: usize,
        exact: bool,
        uniform: bool,
        support: impl Fn(Range<usize>) -> Range<usize>,
    ) -> Self {
        let blocks = rows.div_ceil(block_size.max(1));
        let block = rows.div_ceil(blocks);
        let supports: Vec<Range<usize>> = (0..blocks)
            .map(|k| support(k * block..((k + 1) * block).min(rows)))
            .collect();
        let widest = supports.iter().map(|s| s.len()).max().unwrap_or(1).max(1);
        let strided = match uniform && !exact {
            true => Stride::fit(&supports, columns, widest),
            false => None,
        };
        let (stride, width, starts) = match strided {
            Some((stride, width)) => {
                let starts = (0..blocks)
                    .map(|k| (k * stride.step) as isize - stride.pad_before as isize)
                    .collect();
                (Some(stride), width, starts)
            }
            None => {
                let starts = supports
                    .iter()
                    .map(|s| match exact {
                        true => s.start,
                        false => s.start.min(columns - widest),
                    } as isize)
                    .collect();
                (None, widest, starts)
            }
        };
        Self {
            rows,
            columns,
            block,
            blocks,
            width,
            starts,
            exact,
            supports,
            stride,
        }
    }

    /// The band's entries as a row-major `[blocks, block, width]` array: `weight(row, column)`
    /// where window position `j` of a row reads a column ([`Self::column`]), zero where it
    /// reads padding or the zero row, and for the rows past `rows` that pad the last block.
    pub fn entries(&self, weight: impl Fn(usize, usize) -> f64) -> Vec<f64> {
        let mut values = Vec::with_capacity(self.blocks * self.block * self.width);
        for k in 0..self.blocks {
            for row in k * self.block..(k + 1) * self.block {
                for j in 0..self.width {
                    values.push(match self.column(k, j) {
                        Some(column) if row < self.rows => weight(row, column),
                        _ => 0.0,
                    });
                }
            }
        }
        values
    }

    /// For gathered windows: the column every window position reads, `[blocks · width]` in
    /// block order, with `columns` (one past the last) where it reads the appended zero row or
    /// padding.
    pub fn gather_indices(&self) -> Vec<i64> {
        (0..self.blocks)
            .flat_map(|k| (0..self.width).map(move |j| (k, j)))
            .map(|(k, j)| self.column(k, j).unwrap_or(self.columns) as i64)
            .collect()
    }

    /// The input column that position `j` of block `k`'s window reads, or `None` where it
    /// reads a zero (padding, or for exact windows the appended zero row).
    pub fn column(&self, k: usize, j: usize) -> Option<usize> {
        let column = self.starts[k] + j as isize;
        let outside = column < 0
            || column as usize >= self.columns
            || (self.exact && column as usize >= self.supports[k].end);
        (!outside).then_some(column as usize)
    }

    /// Whether some window reads the appended zero row.
    pub fn reads_zero_row(&self) -> bool {
        self.exact && self.supports.iter().any(|s| s.len() < self.width)
    }

    /// Whether the rows are padded up to whole blocks (the extra rows are cut off).
    pub fn pads_rows(&self) -> bool {
        self.blocks * self.block != self.rows
    }

    /// The part of block `k`'s window that lies inside the input, and the offset of its first
    /// column in the window; exact windows only their support. `None` when the block reads no
    /// input at all.
    pub fn window_inside(&self, k: usize) -> Option<(Range<usize>, usize)> {
        let (start, end) = match self.exact {
            true => (
                self.supports[k].start as isize,
                self.supports[k].end as isize,
            ),
            false => (self.starts[k], self.starts[k] + self.width as isize),
        };
        let first = start.max(0) as usize;
        let last = (end.max(0) as usize).min(self.columns);
        (last > first).then(|| (first..last, (first as isize - self.starts[k]) as usize))
    }
}

/// The ranges that cut `shape` to `range` along `dim` (the whole extent elsewhere): a
/// front door's tensor slice, one per Burn version, over the same ranges.
///
/// ```rust
/// assert_eq!(burn_deterministic_core::ranges_along(&[2, 3, 8], 2, 1..5), vec![0..2, 0..3, 1..5]);
/// ```
pub fn ranges_along(shape: &[usize], dim: usize, range: Range<usize>) -> Vec<Range<usize>> {
    shape
        .iter()
        .enumerate()
        .map(|(d, &size)| if d == dim { range.clone() } else { 0..size })
        .collect()
}

/// Both bands of one axis (`input → output`), `W`'s and `Wᵀ`'s, with `block_size` outputs per
/// forward block, given the input support of every output (`forward`: the tap windows for an
/// estimate, the exact supports of the decoded weights for the map itself).
pub fn band_shapes(
    block_size: usize,
    input: usize,
    output: usize,
    forward: &[Range<usize>],
) -> (BandShape, BandShape) {
    let adjoint = transpose_supports(forward, input);
    let exact = block_size == 1;
    (
        // Uniform windows for the forward only: the adjoint of an upsample reads the large
        // gradient, whose zero-padded copy would cost more than its views do.
        BandShape::new(output, input, block_size, exact, true, |b| {
            union(forward, b)
        }),
        BandShape::new(
            input,
            output,
            adjoint_block(block_size, input, output),
            exact,
            false,
            |b| union(&adjoint, b),
        ),
    )
}

/// Rows per block of the adjoint band, for `block_size` outputs per block of the forward one:
/// as many inputs as such a block reads, so that both bands have about the same aspect (and
/// the same cost). Exact windows stay exact.
fn adjoint_block(block_size: usize, input: usize, output: usize) -> usize {
    if block_size == 1 {
        1
    } else {
        ((block_size * input) / output).max(1)
    }
}

/// Per column of a matrix with row supports `rows`, the range of rows that read it.
fn transpose_supports(rows: &[Range<usize>], columns: usize) -> Vec<Range<usize>> {
    let mut first = vec![usize::MAX; columns];
    let mut last = vec![0; columns];
    for (r, support) in rows.iter().enumerate() {
        for c in support.clone() {
            first[c] = first[c].min(r);
            last[c] = last[c].max(r + 1);
        }
    }
    (0..columns)
        .map(|c| {
            if first[c] == usize::MAX {
                0..0 // read by no row
            } else {
                first[c]..last[c]
            }
        })
        .collect()
}

/// The union of the non-empty supports of `block` (empty when all are).
fn union(supports: &[Range<usize>], block: Range<usize>) -> Range<usize> {
    let parts = supports[block].iter().filter(|s| !s.is_empty());
    let start = parts.clone().map(|s| s.start).min();
    let end = parts.map(|s| s.end).max();
    match (start, end) {
        (Some(start), Some(end)) => start..end,
        _ => 0..0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_the_rows_evenly_and_windows_stay_inside() {
        let supports: Vec<Range<usize>> = (0..10).map(|r| r / 2..r / 2 + 2).collect();
        let shape = BandShape::new(10, 6, 4, false, false, |b| union(&supports, b));
        // ceil(10 / 4) = 3 blocks of ceil(10 / 3) = 4 rows: 12 rows, the last two zero.
        assert_eq!((shape.blocks, shape.block, shape.width), (3, 4, 3));
        assert!(shape.pads_rows());
        assert_eq!(shape.starts, vec![0, 2, 3]); // the last window moved back inside
        assert!(!shape.reads_zero_row());
        assert_eq!(shape.window_inside(2), Some((3..6, 0)));
        let exact = BandShape::new(10, 6, 1, true, true, |b| union(&supports, b));
        assert_eq!((exact.blocks, exact.block, exact.width), (10, 1, 2));
        assert!(!exact.pads_rows());
        assert_eq!(exact.stride, None, "exact windows are never uniform");
        // Row 9 reads 4..6, exactly its support: no zero row needed.
        assert_eq!(exact.column(9, 1), Some(5));
        let ragged: Vec<Range<usize>> = vec![0..1, 0..2, 3..3];
        let exact = BandShape::new(3, 4, 1, true, false, |b| union(&ragged, b));
        assert!(exact.reads_zero_row());
        assert_eq!(exact.column(0, 1), None, "past the support: the zero row");
        assert_eq!(exact.window_inside(0), Some((0..1, 0)), "its support only");
        assert_eq!(
            (exact.column(2, 0), exact.column(2, 1)),
            (None, None),
            "read by nothing"
        );
        assert_eq!(exact.window_inside(2), None);
    }

    #[test]
    fn uniform_windows_hold_every_support_and_pad_the_edges() {
        // Blocks of 4 rows reading 2 columns each, plus a halo of one on both sides: the
        // 4x upsample pattern, clamped at the edges.
        let supports: Vec<Range<usize>> = (0..4)
            .map(|k: usize| (2 * k).saturating_sub(1)..(2 * k + 3).min(8))
            .collect();
        let shape = BandShape::new(16, 8, 4, false, true, |b| supports[b.start / 4].clone());
        let stride = shape.stride.expect("uniform");
        assert_eq!((stride.step, stride.pad_before, shape.width), (2, 1, 4));
        // Padded length (4 - 1) · 2 + 4 = 10 = 1 + 8 + 1.
        assert_eq!((stride.used, stride.pad_after, stride.padded()), (8, 1, 10));
        assert_eq!(shape.starts, vec![-1, 1, 3, 5]);
        assert_eq!(shape.column(0, 0), None, "the padding before the input");
        assert_eq!(shape.column(3, 3), None, "the padding after it");
        assert_eq!(shape.column(3, 2), Some(7));
        assert_eq!(
            shape.window_inside(0),
            Some((0..3, 1)),
            "starts past the padding"
        );
        for (k, support) in supports.iter().enumerate() {
            let window = shape.starts[k]..shape.starts[k] + shape.width as isize;
            assert!(window.start <= support.start as isize && support.end as isize <= window.end);
        }
        // Starts that drift away from any uniform step need windows much wider than the
        // supports: gathered windows instead.
        let drifting = [0..2, 1..3, 6..8, 7..9];
        let shape = BandShape::new(4, 9, 1, false, true, |b| drifting[b.start].clone());
        assert_eq!(shape.stride, None);
        assert_eq!(shape.width, 2);
    }

    /// Entries and gather indices follow `column`: weights where a window reads a column, zero
    /// in the padding rows and past the support of exact windows.
    #[test]
    fn entries_and_indices_follow_the_windows() {
        let ragged: Vec<Range<usize>> = vec![0..1, 0..2, 1..3];
        let shape = BandShape::new(3, 3, 2, false, false, |b| union(&ragged, b));
        // 2 blocks of 2 rows (the 4th row pads), windows of the widest support, 2: block 0
        // reads columns 0..2, block 1 columns 1..3.
        assert_eq!((shape.blocks, shape.block, shape.width), (2, 2, 2));
        let entries = shape.entries(|row, column| (10 * row + column) as f64);
        assert_eq!(entries, vec![0.0, 1.0, 10.0, 11.0, 21.0, 22.0, 0.0, 0.0]);
        assert_eq!(shape.gather_indices(), vec![0, 1, 1, 2]);
        let exact = BandShape::new(3, 3, 1, true, false, |b| union(&ragged, b));
        assert_eq!(exact.width, 2);
        assert_eq!(
            exact.gather_indices(),
            vec![0, 3, 0, 1, 1, 2],
            "3: the zero row"
        );
        let entries = exact.entries(|row, column| (10 * row + column) as f64);
        assert_eq!(entries, vec![0.0, 0.0, 10.0, 11.0, 21.0, 22.0]);
    }

    #[test]
    fn transposed_supports_list_the_rows_that_read_each_column() {
        let rows = vec![0..2, 1..3, 4..5];
        assert_eq!(
            transpose_supports(&rows, 6),
            vec![0..1, 0..2, 1..2, 0..0, 2..3, 0..0]
        );
    }

    /// The adjoint band reads, for each block of inputs, exactly the outputs whose taps touch
    /// them: a 2× upsample where output `o` reads inputs `o/2 .. o/2 + 2`.
    #[test]
    fn the_adjoint_band_is_the_transposed_support() {
        let (input, output) = (4, 8);
        let forward: Vec<Range<usize>> =
            (0..output).map(|o| o / 2..(o / 2 + 2).min(input)).collect();
        let (f, a) = band_shapes(4, input, output, &forward);
        assert_eq!((f.rows, f.columns, f.blocks, f.block), (8, 4, 2, 4));
        // 4 outputs per forward block read 4·4/8 = 2 inputs: adjoint blocks of 2 inputs.
        assert_eq!((a.rows, a.columns, a.blocks, a.block), (4, 8, 2, 2));
        // Inputs 0..2 are read by outputs 0..4; inputs 2..4 by outputs 2..8.
        assert_eq!(a.supports, vec![0..4, 2..8]);
        assert_eq!(
            a.stride, None,
            "adjoint windows are gathered or views, never padded"
        );
        let (f1, a1) = band_shapes(1, input, output, &forward);
        assert!(f1.exact && a1.exact && a1.block == 1);
    }
}
