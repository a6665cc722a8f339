//! Where an output's taps may land, from the coordinate rules alone.

use crate::{Mode, Resampling};
use core::ops::Range;

/// The inputs output `o` of an `input → output` axis may read, widened by one input each side so
/// that a kernel's own rounding of the source coordinate cannot fall outside. Conservative: the
/// weights decoded are trimmed to the exact support, and [`crate::decode_axis`] verifies the
/// window.
pub fn tap_window(o: usize, input: usize, output: usize, resampling: Resampling) -> Range<usize> {
    let (o, i, n) = (o as f64, input as f64, output as f64);
    let (source, before, after) = match resampling.mode {
        Mode::Nearest => ((o * i / n).floor(), 0.0, 0.0),
        Mode::NearestExact => (((o + 0.5) * i / n).floor(), 0.0, 0.0),
        Mode::Bilinear | Mode::Bicubic | Mode::Lanczos3 => {
            let source = if resampling.align_corners {
                if output > 1 {
                    o * (i - 1.0) / (n - 1.0)
                } else {
                    0.0
                }
            } else {
                (o + 0.5) * (i / n) - 0.5
            };
            let (before, after) = match resampling.mode {
                Mode::Bilinear => (0.0, 1.0),
                Mode::Bicubic => (1.0, 2.0),
                _ => (2.0, 3.0), // Lanczos3: taps -2..=3
            };
            (source.floor(), before, after)
        }
    };
    let first = ((source - before - 1.0).max(0.0) as usize).min(input - 1);
    let last = ((source + after + 1.0).max(0.0) as usize).min(input - 1);
    first..last.max(first) + 1
}

/// [`tap_window`] of every output, or `None` when the host cannot hold one window per output
/// (an absurd output size): reserved up front, so that fails as a value, not an abort.
pub fn tap_windows(
    input: usize,
    output: usize,
    resampling: Resampling,
) -> Option<Vec<Range<usize>>> {
    let mut windows = Vec::new();
    windows.try_reserve_exact(output).ok()?;
    windows.extend((0..output).map(|o| tap_window(o, input, output, resampling)));
    Some(windows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tap_windows_stay_inside_the_input() {
        for mode in [
            Mode::Nearest,
            Mode::NearestExact,
            Mode::Bilinear,
            Mode::Bicubic,
            Mode::Lanczos3,
        ] {
            for align_corners in [false, true] {
                let resampling = Resampling {
                    mode,
                    align_corners,
                };
                for (input, output) in [(1, 1), (1, 7), (7, 1), (5, 17), (64, 9)] {
                    for o in 0..output {
                        let w = tap_window(o, input, output, resampling);
                        assert!(
                            !w.is_empty() && w.end <= input,
                            "{resampling:?} {input}->{output} o={o}: {w:?}"
                        );
                    }
                }
            }
        }
    }

    /// A 2× bilinear upsample without aligned corners: output 5 sits at source 2.25, between
    /// inputs 2 and 3, widened by one each side.
    #[test]
    fn a_bilinear_window_holds_both_taps_and_a_margin() {
        let resampling = Resampling {
            mode: Mode::Bilinear,
            align_corners: false,
        };
        assert_eq!(tap_window(5, 8, 16, resampling), 1..5);
        let exact = Resampling {
            mode: Mode::NearestExact,
            align_corners: false,
        };
        // (5 + ½) · 8 / 16 = 2.75: input 2, widened to 1..4.
        assert_eq!(tap_window(5, 8, 16, exact), 1..4);
    }
}
