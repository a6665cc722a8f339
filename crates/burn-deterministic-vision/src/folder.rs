//! Real data from a folder of PNG files, for users with their own images.
//!
//! Layout (file names pair an image with its label; files are read in sorted name order, so the
//! dataset order is the same on every machine):
//!
//! ```text
//! DIR/images/NAME.png   RGB, RGBA or grey, 8 or 16 bit
//! DIR/masks/NAME.png    segmentation: 8-bit grey, pixel value = class id
//! DIR/depth/NAME.png    depth: 16-bit grey, metres = value / depth_scale, 0 = invalid pixel
//! ```
//!
//! All images of a folder must have one size (the models need a multiple of 8 per side); a
//! mismatch, a missing label, a class id out of range or an unreadable file is an error naming
//! the file.

use crate::data::{DepthSample, SampleSource, SegmentationSample};
use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// Why a folder could not be loaded.
#[derive(Debug)]
pub struct FolderError {
    pub path: PathBuf,
    pub reason: String,
}

impl fmt::Display for FolderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for FolderError {}

fn error(path: &Path, reason: impl Into<String>) -> FolderError {
    FolderError {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// A decoded PNG: `channels` interleaved planes of `u16` samples (8-bit values kept as 0..=255).
struct Png {
    size: [usize; 2],
    channels: usize,
    bit_depth: u8,
    samples: Vec<u16>,
}

fn read_png(path: &Path) -> Result<Png, FolderError> {
    let file = File::open(path).map_err(|e| error(path, e.to_string()))?;
    let mut decoder = png::Decoder::new(BufReader::new(file));
    // Palette and low bit depths to 8 bit; 16 bit stays 16 bit (depth maps need it).
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder
        .read_info()
        .map_err(|e| error(path, format!("not a readable PNG: {e}")))?;
    let mut buffer = vec![0; reader.output_buffer_size().unwrap_or(0)];
    let info = reader
        .next_frame(&mut buffer)
        .map_err(|e| error(path, format!("not a readable PNG: {e}")))?;
    let channels = info.color_type.samples();
    let samples = match info.bit_depth {
        png::BitDepth::Sixteen => buffer[..info.buffer_size()]
            .chunks_exact(2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .collect(),
        _ => buffer[..info.buffer_size()]
            .iter()
            .map(|&b| b as u16)
            .collect(),
    };
    Ok(Png {
        size: [info.height as usize, info.width as usize],
        channels,
        bit_depth: info.bit_depth as u8,
        samples,
    })
}

/// RGB planes in `[0, 1]` (`[3, H, W]`, planar) from an RGB(A) or grey PNG.
fn read_image(path: &Path) -> Result<(Vec<f32>, [usize; 2]), FolderError> {
    let png = read_png(path)?;
    let [h, w] = png.size;
    let max = if png.bit_depth == 16 { 65535.0 } else { 255.0 };
    let mut image = vec![0.0f32; 3 * h * w];
    for p in 0..h * w {
        for c in 0..3 {
            // Grey (+alpha) images repeat their one colour channel.
            let source = if png.channels >= 3 { c } else { 0 };
            image[c * h * w + p] = png.samples[p * png.channels + source] as f32 / max;
        }
    }
    Ok((image, png.size))
}

/// One grey channel of a PNG, checked against `bit_depth`.
fn read_grey(path: &Path, bit_depth: u8) -> Result<(Vec<u16>, [usize; 2]), FolderError> {
    let png = read_png(path)?;
    if png.channels != 1 || png.bit_depth != bit_depth {
        return Err(error(
            path,
            format!(
                "expected a {bit_depth}-bit grey PNG, found {} channel(s) of {} bit",
                png.channels, png.bit_depth
            ),
        ));
    }
    Ok((png.samples, png.size))
}

/// `DIR/images/*.png` in name order, each with the path of its label in `DIR/<labels>/`.
fn pairs(dir: &Path, labels: &str) -> Result<Vec<(PathBuf, PathBuf)>, FolderError> {
    let images = dir.join("images");
    let entries = std::fs::read_dir(&images).map_err(|e| error(&images, e.to_string()))?;
    let mut names: Vec<_> = entries
        .filter_map(|entry| entry.ok().map(|e| e.file_name()))
        .filter(|name| Path::new(name).extension().is_some_and(|e| e == "png"))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(error(&images, "no .png files"));
    }
    names
        .into_iter()
        .map(|name| {
            let label = dir.join(labels).join(&name);
            if label.is_file() {
                Ok((images.join(&name), label))
            } else {
                Err(error(&label, "missing label for this image"))
            }
        })
        .collect()
}

fn check_size(path: &Path, size: [usize; 2], expected: [usize; 2]) -> Result<(), FolderError> {
    if size != expected {
        return Err(error(
            path,
            format!("size {size:?} differs from the folder's {expected:?}"),
        ));
    }
    if !size[0].is_multiple_of(8) || !size[1].is_multiple_of(8) {
        return Err(error(
            path,
            format!("size {size:?}: the models need multiples of 8"),
        ));
    }
    Ok(())
}

/// Segmentation samples loaded from a folder (see the module docs).
#[derive(Debug, Clone)]
pub struct SegmentationFolder {
    pub samples: Vec<SegmentationSample>,
}

impl SegmentationFolder {
    pub fn open(dir: impl AsRef<Path>, classes: usize) -> Result<Self, FolderError> {
        let mut samples = Vec::new();
        let mut folder_size = None;
        for (image_path, mask_path) in pairs(dir.as_ref(), "masks")? {
            let (image, size) = read_image(&image_path)?;
            check_size(&image_path, size, *folder_size.get_or_insert(size))?;
            let (mask, mask_size) = read_grey(&mask_path, 8)?;
            check_size(&mask_path, mask_size, size)?;
            if let Some(bad) = mask.iter().find(|&&c| c as usize >= classes) {
                return Err(error(
                    &mask_path,
                    format!("class id {bad} out of range for {classes} classes"),
                ));
            }
            samples.push(SegmentationSample {
                image,
                mask: mask.into_iter().map(usize::from).collect(),
                size,
            });
        }
        Ok(Self { samples })
    }
}

impl SampleSource<SegmentationSample> for SegmentationFolder {
    fn sample(&self, index: usize) -> Option<SegmentationSample> {
        self.samples.get(index).cloned()
    }

    fn sample_count(&self) -> usize {
        self.samples.len()
    }
}

/// Depth samples loaded from a folder (see the module docs).
#[derive(Debug, Clone)]
pub struct DepthFolder {
    pub samples: Vec<DepthSample>,
}

impl DepthFolder {
    /// `depth_scale`: PNG value per metre (1000 for millimetres, 256 for KITTI).
    pub fn open(dir: impl AsRef<Path>, depth_scale: f32) -> Result<Self, FolderError> {
        let dir = dir.as_ref();
        if !(depth_scale.is_finite() && depth_scale > 0.0) {
            return Err(error(
                dir,
                format!("depth scale must be positive, got {depth_scale}"),
            ));
        }
        let mut samples = Vec::new();
        let mut folder_size = None;
        for (image_path, depth_path) in pairs(dir, "depth")? {
            let (image, size) = read_image(&image_path)?;
            check_size(&image_path, size, *folder_size.get_or_insert(size))?;
            let (depth, depth_size) = read_grey(&depth_path, 16)?;
            check_size(&depth_path, depth_size, size)?;
            samples.push(DepthSample {
                image,
                depth: depth.into_iter().map(|d| d as f32 / depth_scale).collect(),
                size,
            });
        }
        Ok(Self { samples })
    }
}

impl SampleSource<DepthSample> for DepthFolder {
    fn sample(&self, index: usize) -> Option<DepthSample> {
        self.samples.get(index).cloned()
    }

    fn sample_count(&self) -> usize {
        self.samples.len()
    }
}

/// Writes a PNG (`channels` interleaved samples per pixel, 8 or 16 bit): for tests and for
/// users who want to export the synthetic data as a folder.
pub fn write_png(
    path: &Path,
    size: [usize; 2],
    channels: usize,
    samples: &[u16],
    sixteen_bit: bool,
) -> Result<(), FolderError> {
    let colour = match channels {
        1 => png::ColorType::Grayscale,
        3 => png::ColorType::Rgb,
        4 => png::ColorType::Rgba,
        n => return Err(error(path, format!("unsupported channel count {n}"))),
    };
    let file = File::create(path).map_err(|e| error(path, e.to_string()))?;
    let mut encoder = png::Encoder::new(
        std::io::BufWriter::new(file),
        size[1] as u32,
        size[0] as u32,
    );
    encoder.set_color(colour);
    let bytes: Vec<u8> = if sixteen_bit {
        encoder.set_depth(png::BitDepth::Sixteen);
        samples.iter().flat_map(|s| s.to_be_bytes()).collect()
    } else {
        encoder.set_depth(png::BitDepth::Eight);
        samples.iter().map(|&s| s.min(255) as u8).collect()
    };
    let mut writer = encoder
        .write_header()
        .map_err(|e| error(path, e.to_string()))?;
    writer
        .write_image_data(&bytes)
        .map_err(|e| error(path, e.to_string()))
}

/// The synthetic segmentation sample as PNG files `images/NAME.png` and `masks/NAME.png`.
pub fn export_segmentation(
    dir: &Path,
    name: &str,
    sample: &SegmentationSample,
) -> Result<(), FolderError> {
    let [h, w] = sample.size;
    for sub in ["images", "masks"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).map_err(|e| error(&path, e.to_string()))?;
    }
    let rgb: Vec<u16> = (0..h * w)
        .flat_map(|p| (0..3).map(move |c| (c, p)))
        .map(|(c, p)| (sample.image[c * h * w + p] * 255.0).round() as u16)
        .collect();
    let mask: Vec<u16> = sample.mask.iter().map(|&c| c as u16).collect();
    write_png(&dir.join("images").join(name), sample.size, 3, &rgb, false)?;
    write_png(&dir.join("masks").join(name), sample.size, 1, &mask, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::SyntheticSegmentation;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "burn-deterministic-vision-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn segmentation_folder_round_trips_exported_samples() {
        let dir = temp_dir("seg");
        let data = SyntheticSegmentation::new(4, [8, 16], 5, 3);
        for i in 0..3 {
            export_segmentation(&dir, &format!("{i:03}.png"), &data.get(i)).unwrap();
        }
        let folder = SegmentationFolder::open(&dir, 5).unwrap();
        assert_eq!(folder.sample_count(), 3);
        for i in 0..3 {
            let (original, loaded) = (data.get(i), folder.sample(i).unwrap());
            assert_eq!(loaded.mask, original.mask);
            assert_eq!(loaded.size, [8, 16]);
            // Images are quantised to 8 bit.
            let worst = original
                .image
                .iter()
                .zip(&loaded.image)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(worst <= 0.5 / 255.0 + 1e-6, "{worst}");
        }
        // Too few classes for the stored ids: a clear error naming the mask.
        let err = SegmentationFolder::open(&dir, 2).unwrap_err();
        assert!(err.path.starts_with(dir.join("masks")), "{err}");
        assert!(err.reason.contains("out of range"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn depth_folder_reads_sixteen_bit_with_scale_and_holes() {
        let dir = temp_dir("depth");
        for sub in ["images", "depth"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let size = [8, 8];
        let grey: Vec<u16> = (0..64).map(|v| v * 4).collect();
        write_png(&dir.join("images/a.png"), size, 1, &grey, false).unwrap();
        let depth: Vec<u16> = (0..64).map(|v| v * 250).collect(); // 0 = hole
        write_png(&dir.join("depth/a.png"), size, 1, &depth, true).unwrap();
        let folder = DepthFolder::open(&dir, 1000.0).unwrap();
        let sample = folder.sample(0).unwrap();
        assert_eq!(sample.depth[0], 0.0);
        assert_eq!(sample.depth[4], 1.0);
        assert_eq!(sample.image[5], 20.0 / 255.0);
        assert_eq!(sample.image[64 + 5], sample.image[5]); // grey repeated into RGB
                                                           // An 8-bit depth map is refused with its path and what was expected.
        write_png(&dir.join("depth/a.png"), size, 1, &grey, false).unwrap();
        let err = DepthFolder::open(&dir, 1000.0).unwrap_err();
        assert!(err.reason.contains("16-bit grey"), "{err}");
        // An image without a label.
        write_png(&dir.join("depth/a.png"), size, 1, &depth, true).unwrap();
        write_png(&dir.join("images/b.png"), size, 1, &grey, false).unwrap();
        let err = DepthFolder::open(&dir, 1000.0).unwrap_err();
        assert!(err.path.ends_with("depth/b.png"), "{err}");
        assert!(err.reason.contains("missing label"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn odd_sizes_are_refused() {
        let dir = temp_dir("odd");
        let data = SyntheticSegmentation::new(4, [6, 8], 3, 1);
        export_segmentation(&dir, "x.png", &data.get(0)).unwrap();
        let err = SegmentationFolder::open(&dir, 3).unwrap_err();
        assert!(err.reason.contains("multiples of 8"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
