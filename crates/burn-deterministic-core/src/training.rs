//! The Burn-free bookkeeping of the training toolkits: where a resumed run's data loader starts
//! and how each epoch seeds the backend ([`ResumePoint`], [`epoch_seed`]), and the plain
//! progress lines a renderer prints where a terminal dashboard cannot draw ([`ProgressLines`]).
//! Each front door adapts them to its Burn's data loader and renderer traits.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The backend seed of `epoch` (from 1) in a run seeded with `seed`: SplitMix64 of the two, so
/// neighbouring epochs get unrelated streams.
///
/// ```rust
/// use burn_deterministic_core::training::epoch_seed;
///
/// assert_ne!(epoch_seed(7, 1), epoch_seed(7, 2));
/// assert_eq!(epoch_seed(7, 3), epoch_seed(7, 3));
/// ```
pub fn epoch_seed(seed: u64, epoch: usize) -> u64 {
    let mut z = seed ^ (epoch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Where a resumable data loader stands: the epochs of the wrapped loader still to skip before
/// the first one served, and the number of the next epoch served. Shared by reference between
/// threads (a data loader is `Sync`), so both are atomics.
#[derive(Debug)]
pub struct ResumePoint {
    to_skip: AtomicUsize,
    next_epoch: AtomicUsize,
}

/// What one call of a resumable loader's `iter` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochStart {
    /// Epochs of the wrapped loader to create and drop first (its shuffle advances once each).
    pub skip: usize,
    /// The number (from 1) of the epoch this call serves.
    pub epoch: usize,
}

impl ResumePoint {
    /// A run that resumes after `completed_epochs` epochs (0: a run from the start).
    pub fn after(completed_epochs: usize) -> Self {
        Self {
            to_skip: AtomicUsize::new(completed_epochs),
            next_epoch: AtomicUsize::new(completed_epochs + 1),
        }
    }

    /// The next epoch begins: what to skip (only before the first epoch served) and its number.
    pub fn begin_epoch(&self) -> EpochStart {
        EpochStart {
            skip: self.to_skip.swap(0, Ordering::SeqCst),
            epoch: self.next_epoch.fetch_add(1, Ordering::SeqCst),
        }
    }
}

impl Clone for ResumePoint {
    /// The same point, counted separately from here on (what a loader's `slice` and
    /// `to_device` copies need: each device's share counts its own epochs).
    fn clone(&self) -> Self {
        Self {
            to_skip: AtomicUsize::new(self.to_skip.load(Ordering::SeqCst)),
            next_epoch: AtomicUsize::new(self.next_epoch.load(Ordering::SeqCst)),
        }
    }
}

/// Which split a metric value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The training items.
    Train,
    /// The validation items.
    Valid,
}

/// The lines of a plain progress renderer: per epoch, up to three progress lines (at a quarter,
/// half and three quarters of the training items) and one line with the epoch's train and
/// validation metrics (each the mean of the epoch's entries, weighted by their counts) and its
/// time. Metrics are keyed by `K` (each Burn's metric id) and shown by name, sorted by name:
/// burn-train registers its metrics in a different order from run to run, and sorted lines of
/// two runs can be compared.
///
/// ```rust
/// use burn_deterministic_core::training::{ProgressLines, Split};
///
/// let mut lines = ProgressLines::new();
/// lines.register(1, "Loss");
/// assert_eq!(lines.train_items(1, 10, 1, 8), None);
/// assert_eq!(
///     lines.train_items(1, 10, 2, 8).as_deref(),
///     Some("epoch 1/10: 25% of the training items (2/8)")
/// );
/// lines.numeric(Split::Train, &1, 2.0, 1.0);
/// lines.numeric(Split::Train, &1, 4.0, 3.0);
/// let line = lines.finish_epoch(8.0).unwrap();
/// assert_eq!(line, "epoch 1/10 (8.0 s) train: Loss 3.5000 | valid: -");
/// ```
#[derive(Debug)]
pub struct ProgressLines<K> {
    names: HashMap<K, String>,
    order: Vec<K>,
    /// The open epoch: (number, total).
    epoch: Option<(usize, usize)>,
    quarters_printed: usize,
    train: EpochMeans<K>,
    valid: EpochMeans<K>,
}

impl<K: Eq + Hash + Clone> Default for ProgressLines<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash + Clone> ProgressLines<K> {
    /// Lines with no metric registered and no epoch open.
    pub fn new() -> Self {
        Self {
            names: HashMap::new(),
            order: Vec::new(),
            epoch: None,
            quarters_printed: 0,
            train: EpochMeans::default(),
            valid: EpochMeans::default(),
        }
    }

    /// Names the metric `id` (registering it again renames it).
    pub fn register(&mut self, id: K, name: impl Into<String>) {
        if !self.names.contains_key(&id) {
            self.order.push(id.clone());
        }
        self.names.insert(id, name.into());
        let names = &self.names;
        self.order.sort_by(|a, b| names[a].cmp(&names[b]));
    }

    /// A numeric entry of metric `id`: `value`, counted `weight` times in the epoch's mean.
    pub fn numeric(&mut self, split: Split, id: &K, value: f64, weight: f64) {
        let sum = self.means(split).sums.entry(id.clone()).or_default();
        sum.0 += value * weight;
        sum.1 += weight;
    }

    /// The epoch's authoritative value of metric `id` (computed once at its end): shown instead
    /// of the mean of its entries.
    pub fn final_value(&mut self, split: Split, id: &K, value: f64) {
        self.means(split).finals.insert(id.clone(), value);
    }

    /// A non-numeric entry of metric `id`: its last formatted value is shown.
    pub fn formatted(&mut self, split: Split, id: &K, text: String) {
        self.means(split).formatted.insert(id.clone(), text);
    }

    fn means(&mut self, split: Split) -> &mut EpochMeans<K> {
        match split {
            Split::Train => &mut self.train,
            Split::Valid => &mut self.valid,
        }
    }

    /// Epoch `epoch` of `total_epochs` is open (a new number closes nothing: call
    /// [`finish_epoch`](Self::finish_epoch) first).
    pub fn start_epoch(&mut self, epoch: usize, total_epochs: usize) {
        if self.epoch.map(|(open, _)| open) != Some(epoch) {
            self.epoch = Some((epoch, total_epochs));
            self.quarters_printed = 0;
        }
    }

    /// `processed` of `total` training items of epoch `epoch` (of `total_epochs`) are done:
    /// the progress line, when this crosses the next quarter.
    pub fn train_items(
        &mut self,
        epoch: usize,
        total_epochs: usize,
        processed: usize,
        total: usize,
    ) -> Option<String> {
        self.start_epoch(epoch, total_epochs);
        if total == 0 {
            return None;
        }
        let quarters = (processed * 4 / total).min(3);
        (quarters > self.quarters_printed).then(|| {
            self.quarters_printed = quarters;
            format!(
                "epoch {epoch}/{total_epochs}: {}% of the training items ({processed}/{total})",
                quarters * 25
            )
        })
    }

    /// The open epoch's line, which took `seconds`, if an epoch is open; the epoch is closed.
    pub fn finish_epoch(&mut self, seconds: f64) -> Option<String> {
        let (epoch, total) = self.epoch.take()?;
        let train = self.train.line(&self.order, &self.names);
        let valid = self.valid.line(&self.order, &self.names);
        self.train = EpochMeans::default();
        self.valid = EpochMeans::default();
        Some(format!(
            "epoch {epoch}/{total} ({seconds:.1} s) train: {train} | valid: {valid}"
        ))
    }

    /// The number of the open epoch.
    pub fn open_epoch(&self) -> Option<usize> {
        self.epoch.map(|(epoch, _)| epoch)
    }
}

/// Per metric: the weighted sum and weight of the epoch's numeric entries, or the last
/// formatted value of a non-numeric metric.
#[derive(Debug)]
struct EpochMeans<K> {
    sums: HashMap<K, (f64, f64)>,
    finals: HashMap<K, f64>,
    formatted: HashMap<K, String>,
}

impl<K> Default for EpochMeans<K> {
    fn default() -> Self {
        Self {
            sums: HashMap::new(),
            finals: HashMap::new(),
            formatted: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> EpochMeans<K> {
    fn line(&self, order: &[K], names: &HashMap<K, String>) -> String {
        let mut line = String::new();
        for id in order {
            let mean = match (self.finals.get(id), self.sums.get(id)) {
                (Some(value), _) => Some(*value),
                (None, Some((sum, weight))) if *weight > 0.0 => Some(sum / weight),
                _ => None,
            };
            let value = match (mean, self.formatted.get(id)) {
                (Some(mean), _) => format!("{mean:.4}"),
                (None, Some(formatted)) => formatted.clone(),
                (None, None) => continue,
            };
            if !line.is_empty() {
                line.push_str(", ");
            }
            let _ = write!(line, "{} {value}", names[id]);
        }
        if line.is_empty() {
            line.push('-');
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_point_skips_once_and_numbers_epochs() {
        let point = ResumePoint::after(2);
        let copy = point.clone();
        assert_eq!(point.begin_epoch(), EpochStart { skip: 2, epoch: 3 });
        assert_eq!(point.begin_epoch(), EpochStart { skip: 0, epoch: 4 });
        // A copy counts on its own.
        assert_eq!(copy.begin_epoch(), EpochStart { skip: 2, epoch: 3 });
        assert_eq!(
            ResumePoint::after(0).begin_epoch(),
            EpochStart { skip: 0, epoch: 1 }
        );
    }

    #[test]
    fn epoch_seeds_differ_by_epoch_and_seed() {
        assert_ne!(epoch_seed(1, 1), epoch_seed(1, 2));
        assert_ne!(epoch_seed(1, 1), epoch_seed(2, 1));
        assert_eq!(epoch_seed(9, 4), epoch_seed(9, 4));
    }

    #[test]
    fn progress_lines_print_quarters_once_and_sorted_weighted_means() {
        let mut lines = ProgressLines::new();
        lines.register("b", "mIoU");
        lines.register("a", "Loss");
        let quarters: Vec<_> = (1..=8)
            .filter_map(|done| lines.train_items(2, 3, done, 8))
            .collect();
        assert_eq!(
            quarters,
            [
                "epoch 2/3: 25% of the training items (2/8)",
                "epoch 2/3: 50% of the training items (4/8)",
                "epoch 2/3: 75% of the training items (6/8)",
            ]
        );
        lines.numeric(Split::Train, &"a", 1.0, 3.0);
        lines.numeric(Split::Train, &"a", 3.0, 1.0);
        lines.numeric(Split::Valid, &"b", 20.0, 1.0);
        lines.formatted(Split::Valid, &"a", "n/a".into());
        assert_eq!(
            lines.finish_epoch(1.25).as_deref(),
            Some("epoch 2/3 (1.2 s) train: Loss 1.5000 | valid: Loss n/a, mIoU 20.0000")
        );
        // An epoch's final value wins over the mean of its entries.
        lines.start_epoch(2, 3);
        lines.numeric(Split::Train, &"b", 10.0, 1.0);
        lines.final_value(Split::Train, &"b", 12.5);
        assert_eq!(
            lines.finish_epoch(0.0).as_deref(),
            Some("epoch 2/3 (0.0 s) train: mIoU 12.5000 | valid: -")
        );
        // Closed: nothing more until the next epoch opens, and it starts from empty means.
        assert_eq!(lines.finish_epoch(0.0), None);
        lines.start_epoch(3, 3);
        assert_eq!(
            lines.finish_epoch(0.0).as_deref(),
            Some("epoch 3/3 (0.0 s) train: - | valid: -")
        );
    }
}
