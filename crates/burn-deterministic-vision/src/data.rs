//! Synthetic datasets generated from a seed: no downloads, any size, the same bytes for the
//! same seed on every machine.

use crate::rng::Rng;

/// Samples by index: what each Burn's `Dataset` reads (the glue of each Burn implements its
/// `Dataset` trait over this one).
pub trait SampleSource<I>: Send + Sync {
    /// Sample `index`, if it exists.
    fn sample(&self, index: usize) -> Option<I>;
    /// How many samples there are.
    fn sample_count(&self) -> usize;

    /// Every sample, in order.
    fn all_samples(&self) -> Vec<I> {
        (0..self.sample_count())
            .filter_map(|i| self.sample(i))
            .collect()
    }
}

/// An RGB image `[3, H, W]` in `[0, 1]` with a class id per pixel `[H, W]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentationSample {
    pub image: Vec<f32>,
    pub mask: Vec<usize>,
    pub size: [usize; 2],
}

/// Scenes of overlapping shapes (discs, rectangles, triangles), one class per shape kind and
/// colour family, on a textured, noisy background (class 0).
#[derive(Debug, Clone)]
pub struct SyntheticSegmentation {
    pub seed: u64,
    pub size: [usize; 2],
    pub classes: usize,
    pub len: usize,
}

impl SyntheticSegmentation {
    pub fn new(seed: u64, size: [usize; 2], classes: usize, len: usize) -> Self {
        assert!(
            classes >= 2,
            "need the background and at least one shape class"
        );
        Self {
            seed,
            size,
            classes,
            len,
        }
    }

    /// The base colour of a class: fixed, spread over the RGB cube.
    fn colour(class: usize) -> [f32; 3] {
        let mut rng = Rng::new(0xC0105 + class as u64);
        [
            rng.range(0.1, 0.9),
            rng.range(0.1, 0.9),
            rng.range(0.1, 0.9),
        ]
    }

    pub fn get(&self, index: usize) -> SegmentationSample {
        assert!(index < self.len, "index {index} out of range");
        let [h, w] = self.size;
        let mut rng = Rng::for_item(self.seed, index as u64);
        let mut image = vec![0.0f32; 3 * h * w];
        let mut mask = vec![0usize; h * w];
        // Background: a random sinusoidal texture plus noise.
        let (fx, fy, phase) = (
            rng.range(0.05, 0.4),
            rng.range(0.05, 0.4),
            rng.range(0.0, 6.3),
        );
        for y in 0..h {
            for x in 0..w {
                let t = 0.35 + 0.15 * ((fx * x as f32 + fy * y as f32 + phase).sin());
                for c in 0..3 {
                    image[c * h * w + y * w + x] = t + rng.range(-0.08, 0.08);
                }
            }
        }
        let shapes = 2 + rng.below(3);
        for _ in 0..shapes {
            let class = 1 + rng.below(self.classes - 1);
            let base = Self::colour(class);
            let (cx, cy) = (rng.range(0.0, w as f32), rng.range(0.0, h as f32));
            let radius = rng.range(0.12, 0.3) * h.min(w) as f32;
            let kind = class % 3;
            for y in 0..h {
                for x in 0..w {
                    let (dx, dy) = (x as f32 - cx, y as f32 - cy);
                    let inside = match kind {
                        0 => dx * dx + dy * dy <= radius * radius,
                        1 => dx.abs() <= radius && dy.abs() <= 0.6 * radius,
                        _ => dy <= radius && dy >= -radius && dx.abs() <= (radius - dy) * 0.5,
                    };
                    if inside {
                        mask[y * w + x] = class;
                        for c in 0..3 {
                            image[c * h * w + y * w + x] =
                                (base[c] + rng.range(-0.1, 0.1)).clamp(0.0, 1.0);
                        }
                    }
                }
            }
        }
        SegmentationSample {
            image,
            mask,
            size: self.size,
        }
    }
}

/// An RGB image `[3, H, W]` with metric depth `[H, W]`; `0` marks an invalid pixel (a hole).
#[derive(Debug, Clone, PartialEq)]
pub struct DepthSample {
    pub image: Vec<f32>,
    pub depth: Vec<f32>,
    pub size: [usize; 2],
}

/// Ray-cast scenes of a ground plane, a back wall, boxes and spheres, shaded by a directional
/// light, with invalid-pixel holes (sensor dropout and a missing patch).
#[derive(Debug, Clone)]
pub struct SyntheticDepth {
    pub seed: u64,
    pub size: [usize; 2],
    pub len: usize,
}

impl SyntheticDepth {
    pub fn new(seed: u64, size: [usize; 2], len: usize) -> Self {
        Self { seed, size, len }
    }

    pub fn get(&self, index: usize) -> DepthSample {
        assert!(index < self.len, "index {index} out of range");
        let [h, w] = self.size;
        let mut rng = Rng::for_item(self.seed, index as u64);
        let spheres: Vec<([f32; 3], f32, [f32; 3])> = (0..1 + rng.below(3))
            .map(|_| {
                let r = rng.range(0.4, 1.0);
                (
                    [rng.range(-2.0, 2.0), -1.0 + r, rng.range(3.0, 7.0)],
                    r,
                    [rng.unit(), rng.unit(), rng.unit()],
                )
            })
            .collect();
        let boxes: Vec<([f32; 3], [f32; 3], [f32; 3])> = (0..rng.below(3))
            .map(|_| {
                let (cx, cz, s) = (
                    rng.range(-2.5, 2.5),
                    rng.range(3.0, 7.0),
                    rng.range(0.3, 0.8),
                );
                (
                    [cx - s, -1.0, cz - s],
                    [cx + s, -1.0 + 2.0 * s, cz + s],
                    [rng.unit(), rng.unit(), rng.unit()],
                )
            })
            .collect();
        let light = normalize([0.4, 0.8, -0.45]);
        let focal = 1.2 * w.max(h) as f32 / 2.0;
        let mut image = vec![0.0f32; 3 * h * w];
        let mut depth = vec![0.0f32; h * w];
        for y in 0..h {
            for x in 0..w {
                let dir = normalize([
                    (x as f32 + 0.5 - w as f32 / 2.0) / focal,
                    -(y as f32 + 0.5 - h as f32 / 2.0) / focal,
                    1.0,
                ]);
                // Back wall z = 9 and ground y = -1.
                let mut hit = (9.0 / dir[2], [0.0, 0.0, -1.0], [0.55, 0.55, 0.6]);
                if dir[1] < 0.0 {
                    let t = -1.0 / dir[1];
                    if t < hit.0 {
                        let p = scale(dir, t);
                        let checker = ((p[0].floor() + p[2].floor()) as i64).rem_euclid(2) as f32;
                        hit = (t, [0.0, 1.0, 0.0], [0.3 + 0.2 * checker, 0.35, 0.3]);
                    }
                }
                for (c, r, colour) in &spheres {
                    let oc = scale(*c, -1.0);
                    let b = dot(oc, dir);
                    let disc = b * b - (dot(oc, oc) - r * r);
                    if disc >= 0.0 {
                        let t = -b - disc.sqrt();
                        if t > 0.0 && t < hit.0 {
                            let n = normalize(add(scale(dir, t), oc));
                            hit = (t, n, *colour);
                        }
                    }
                }
                for (lo, hi, colour) in &boxes {
                    if let Some((t, n)) = ray_box(dir, *lo, *hi) {
                        if t < hit.0 {
                            hit = (t, n, *colour);
                        }
                    }
                }
                let (t, n, colour) = hit;
                let shade = 0.25 + 0.75 * dot(n, light).max(0.0);
                for c in 0..3 {
                    image[c * h * w + y * w + x] =
                        (colour[c] * shade + rng.range(-0.02, 0.02)).clamp(0.0, 1.0);
                }
                depth[y * w + x] = t * dir[2]; // z-depth
            }
        }
        // Holes: 2% dropout and one missing patch.
        for d in depth.iter_mut() {
            if rng.unit() < 0.02 {
                *d = 0.0;
            }
        }
        let (px, py) = (rng.below(w), rng.below(h));
        for y in py..(py + h / 8).min(h) {
            for x in px..(px + w / 8).min(w) {
                depth[y * w + x] = 0.0;
            }
        }
        DepthSample {
            image,
            depth,
            size: self.size,
        }
    }
}

fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn add(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn scale(a: [f32; 3], s: f32) -> [f32; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}
fn normalize(a: [f32; 3]) -> [f32; 3] {
    scale(a, 1.0 / dot(a, a).sqrt())
}

/// Slab test of a ray from the origin against an axis-aligned box: distance and face normal.
fn ray_box(dir: [f32; 3], lo: [f32; 3], hi: [f32; 3]) -> Option<(f32, [f32; 3])> {
    let (mut near, mut far, mut axis) = (f32::NEG_INFINITY, f32::INFINITY, 0);
    for a in 0..3 {
        let (t1, t2) = (lo[a] / dir[a], hi[a] / dir[a]);
        let (t1, t2) = (t1.min(t2), t1.max(t2));
        if t1 > near {
            near = t1;
            axis = a;
        }
        far = far.min(t2);
    }
    if near > far || near <= 0.0 {
        return None;
    }
    let mut normal = [0.0; 3];
    normal[axis] = -dir[axis].signum();
    Some((near, normal))
}

/// A sample that can be mirrored left-right.
pub trait HorizontalFlip {
    fn flip_horizontal(&self) -> Self;
}

fn flip_planes<T: Copy>(data: &[T], [h, w]: [usize; 2]) -> Vec<T> {
    let mut out = Vec::with_capacity(data.len());
    for row in data.chunks_exact(w) {
        out.extend(row.iter().rev());
    }
    debug_assert_eq!(out.len() % (h * w), 0);
    out
}

impl HorizontalFlip for SegmentationSample {
    fn flip_horizontal(&self) -> Self {
        Self {
            image: flip_planes(&self.image, self.size),
            mask: flip_planes(&self.mask, self.size),
            size: self.size,
        }
    }
}

impl HorizontalFlip for DepthSample {
    fn flip_horizontal(&self) -> Self {
        Self {
            image: flip_planes(&self.image, self.size),
            depth: flip_planes(&self.depth, self.size),
            size: self.size,
        }
    }
}

/// Whether the seeded flip augmentation mirrors item `index`: probability 1/2, decided by
/// `(seed, index)` alone, so the same items are flipped in every run and in every process,
/// whatever order or thread reads them.
pub fn flips(seed: u64, index: usize) -> bool {
    Rng::for_item(seed, index as u64).next_u64() & 1 == 1
}

/// The one size of a batch's samples.
///
/// # Panics
/// On an empty batch or samples of different sizes.
fn batch_size_of(sizes: impl Iterator<Item = [usize; 2]>) -> [usize; 2] {
    let mut sizes = sizes;
    let first = sizes.next().expect("a batch needs at least one sample");
    for size in sizes {
        assert_eq!(size, first, "samples of one batch must have the same size");
    }
    first
}

/// A batch of segmentation samples as host buffers: images `[N, 3, H, W]`, class ids
/// `[N, H, W]`, and `[N, H, W]`.
pub fn stack_segmentation(items: &[SegmentationSample]) -> (Vec<f32>, Vec<i64>, [usize; 3]) {
    let [h, w] = batch_size_of(items.iter().map(|s| s.size));
    let images = items.iter().flat_map(|s| s.image.iter().copied()).collect();
    let masks = items
        .iter()
        .flat_map(|s| s.mask.iter().map(|&c| c as i64))
        .collect();
    (images, masks, [items.len(), h, w])
}

/// A batch of depth samples as host buffers: images `[N, 3, H, W]`, depth `[N, 1, H, W]`, and
/// `[N, H, W]`.
pub fn stack_depth(items: &[DepthSample]) -> (Vec<f32>, Vec<f32>, [usize; 3]) {
    let [h, w] = batch_size_of(items.iter().map(|s| s.size));
    let images = items.iter().flat_map(|s| s.image.iter().copied()).collect();
    let depth = items.iter().flat_map(|s| s.depth.iter().copied()).collect();
    (images, depth, [items.len(), h, w])
}

impl SampleSource<SegmentationSample> for SyntheticSegmentation {
    fn sample(&self, index: usize) -> Option<SegmentationSample> {
        (index < self.len).then(|| self.get(index))
    }

    fn sample_count(&self) -> usize {
        self.len
    }
}

impl SampleSource<DepthSample> for SyntheticDepth {
    fn sample(&self, index: usize) -> Option<DepthSample> {
        (index < self.len).then(|| self.get(index))
    }

    fn sample_count(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let a = SyntheticSegmentation::new(7, [24, 32], 5, 10);
        assert_eq!(a.get(3), a.get(3));
        assert_ne!(
            a.get(3),
            SyntheticSegmentation::new(8, [24, 32], 5, 10).get(3)
        );
        let d = SyntheticDepth::new(7, [24, 32], 10);
        assert_eq!(d.get(2), d.get(2));
        assert_ne!(d.get(2).depth, d.get(3).depth);
    }

    #[test]
    fn segmentation_scenes_hold_shapes_and_background() {
        let data = SyntheticSegmentation::new(1, [32, 32], 4, 20);
        let mut seen = [false; 4];
        for i in 0..20 {
            let s = data.get(i);
            assert!(s
                .image
                .iter()
                .all(|v| (0.0..=1.0).contains(v) || *v > -0.1 && *v < 0.6));
            for &c in &s.mask {
                seen[c] = true;
            }
        }
        assert!(seen.iter().all(|s| *s), "every class appears: {seen:?}");
    }

    #[test]
    fn depth_scenes_are_positive_with_holes() {
        let s = SyntheticDepth::new(3, [40, 48], 1).get(0);
        let holes = s.depth.iter().filter(|d| **d == 0.0).count();
        assert!(holes > 0 && holes < s.depth.len() / 4, "{holes}");
        assert!(s.depth.iter().all(|d| *d == 0.0 || (0.5..20.0).contains(d)));
    }
}
