//! Where a 2-D deformable convolution's bilinear samples read its input, and with what weight:
//! the part of its input gradient that is arithmetic on offsets, not tensors.
//!
//! Each output pixel `(oy, ox)` of kernel tap `(ky, kx)` samples the input of its offset group
//! at `y = oy·stride + ky·dilation − padding + offset_y` (likewise `x`), reading the corners
//! `(⌊y⌋ + dy, ⌊x⌋ + dx)`, `dy, dx ∈ {0, 1}`, that lie inside the image and less than one pixel
//! from the sample, weighted `mask · (1 − |y − yp|) · (1 − |x − xp|)`: the expressions of
//! Burn's CubeCL kernel (`deform_col2img`), evaluated in the same precision and order.

/// The sizes and options of one `deform_conv2d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeformGeometry {
    /// Batch size.
    pub batch: usize,
    /// Offset groups (each samples its own positions for its share of the channels).
    pub offset_groups: usize,
    /// Input `[height, width]`.
    pub input: [usize; 2],
    /// Kernel `[height, width]`.
    pub kernel: [usize; 2],
    /// Output `[height, width]`.
    pub output: [usize; 2],
    /// Stride per axis.
    pub stride: [usize; 2],
    /// Padding per axis.
    pub padding: [usize; 2],
    /// Dilation per axis.
    pub dilation: [usize; 2],
}

impl DeformGeometry {
    /// Kernel taps × output pixels × batch × offset groups: the samples.
    pub fn samples(&self) -> usize {
        self.batch
            * self.offset_groups
            * self.kernel[0]
            * self.kernel[1]
            * self.output[0]
            * self.output[1]
    }

    /// Rows of input pixels, one per `(batch, offset group, pixel)`: the key of a corner that
    /// lies outside the image is this count (a row of zeros the front doors append).
    pub fn pixel_rows(&self) -> usize {
        self.batch * self.offset_groups * self.input[0] * self.input[1]
    }
}

/// The float types the sample positions are computed in.
pub trait SampleFloat:
    Copy
    + PartialOrd
    + core::ops::Sub<Output = Self>
    + core::ops::Add<Output = Self>
    + core::ops::Mul<Output = Self>
{
    /// `0` and `1`.
    const ZERO: Self;
    /// `1`.
    const ONE: Self;
    /// A small count, exactly.
    fn from_count(count: usize) -> Self;
    /// Round down.
    fn floor(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// The integer part of a non-negative whole value.
    fn to_count(self) -> usize;
}

macro_rules! sample_float {
    ($t:ty) => {
        impl SampleFloat for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn from_count(count: usize) -> Self {
                count as $t
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn to_count(self) -> usize {
                self as usize
            }
        }
    };
}
sample_float!(f32);
sample_float!(f64);

/// For every sample (row-major over `[batch, offset group, tap, output pixel]`) and each of its
/// four corners `(0,0), (0,1), (1,0), (1,1)`: the pixel row it reads (`(b · groups + g) ·
/// height · width + yp · width + xp`, or [`DeformGeometry::pixel_rows`] where the corner is
/// outside or not within a pixel of the sample) and its weight (zero there).
///
/// `offset` is `[batch, offset groups · taps · 2, out_h, out_w]` (channel `2·tap` rows,
/// `2·tap + 1` columns) and `mask` `[batch, offset groups · taps, out_h, out_w]`, row-major.
pub fn corner_samples<T: SampleFloat>(
    geometry: &DeformGeometry,
    offset: &[T],
    mask: Option<&[T]>,
) -> (Vec<usize>, Vec<T>) {
    let DeformGeometry {
        batch,
        offset_groups,
        input: [height, width],
        kernel: [kernel_h, kernel_w],
        output: [out_h, out_w],
        stride,
        padding,
        dilation,
    } = *geometry;
    let (taps, pixels) = (kernel_h * kernel_w, out_h * out_w);
    let outside = geometry.pixel_rows();
    let mut rows = Vec::with_capacity(4 * geometry.samples());
    let mut weights = Vec::with_capacity(4 * geometry.samples());
    for b in 0..batch {
        for group in 0..offset_groups {
            let row_base = (b * offset_groups + group) * height * width;
            for tap in 0..taps {
                let (ky, kx) = (tap / kernel_w, tap % kernel_w);
                let offset_channel = (b * offset_groups + group) * taps * 2 + tap * 2;
                let mask_channel = (b * offset_groups + group) * taps + tap;
                for pixel in 0..pixels {
                    let (oy, ox) = (pixel / out_w, pixel % out_w);
                    let offset_y = offset[offset_channel * pixels + pixel];
                    let offset_x = offset[(offset_channel + 1) * pixels + pixel];
                    let modulation = mask.map_or(T::ONE, |m| m[mask_channel * pixels + pixel]);
                    let y = T::from_count(oy * stride[0] + ky * dilation[0])
                        - T::from_count(padding[0])
                        + offset_y;
                    let x = T::from_count(ox * stride[1] + kx * dilation[1])
                        - T::from_count(padding[1])
                        + offset_x;
                    for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let yp = y.floor() + T::from_count(dy);
                        let xp = x.floor() + T::from_count(dx);
                        let inside = yp >= T::ZERO
                            && yp < T::from_count(height)
                            && xp >= T::ZERO
                            && xp < T::from_count(width)
                            && (y - yp).abs() < T::ONE
                            && (x - xp).abs() < T::ONE;
                        if inside {
                            let weight = (T::ONE - (y - yp).abs()) * (T::ONE - (x - xp).abs());
                            rows.push(row_base + yp.to_count() * width + xp.to_count());
                            weights.push(modulation * weight);
                        } else {
                            rows.push(outside);
                            weights.push(T::ZERO);
                        }
                    }
                }
            }
        }
    }
    (rows, weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_between_four_pixels_reads_them_with_bilinear_weights() {
        // One 3x3 input, a 1x1 kernel, one output pixel moved to (0.25, 1.5).
        let geometry = DeformGeometry {
            batch: 1,
            offset_groups: 1,
            input: [3, 3],
            kernel: [1, 1],
            output: [1, 1],
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
        };
        let (rows, weights) = corner_samples(&geometry, &[0.25f64, 1.5], Some(&[2.0]));
        assert_eq!(rows, [1, 2, 4, 5]);
        assert_eq!(
            weights,
            [
                2.0 * 0.75 * 0.5,
                2.0 * 0.75 * 0.5,
                2.0 * 0.25 * 0.5,
                2.0 * 0.25 * 0.5
            ]
        );
        // On a whole position only its own pixel is within a pixel; past the edge, nothing.
        let (rows, weights) = corner_samples(&geometry, &[2.0f32, 1.0], None);
        assert_eq!(rows, [7, 9, 9, 9]);
        assert_eq!(weights, [1.0, 0.0, 0.0, 0.0]);
        let (rows, _) = corner_samples(&geometry, &[-1.5f32, 0.0], None);
        assert_eq!(rows, [9; 4]);
    }
}
