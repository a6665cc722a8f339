//! A fixed order for adding values that share a key — the sum behind a scatter-add and behind
//! the backward of a gather — in which no two additions ever race on one place with a third.
//!
//! A device that scatters with float atomics adds the values of one key in the order its
//! threads arrive, so the rounding of a key's sum changes from run to run as soon as three
//! values meet: `(a + b) + c` and `(a + c) + b` differ in the last bits. Two values cannot
//! disagree: into a zero, an atomic add of `a` and `b` gives `a + b` or `b + a`, and float
//! addition is commutative. A [`PairwisePlan`] therefore adds each key's values as a binary
//! tree, one level per pass, every node of a level receiving at most two values: the passes
//! may run on any scatter the backend has, atomic or not, and the bits cannot change.
//!
//! Each key's values meet in their order of occurrence: level 1 adds values 0 + 1, 2 + 3, …,
//! level 2 adds those pair sums pairwise, until one value per key is left (its *root*). Keys
//! with a single value are roots at level 0. The tree is a pure function of the key sequence,
//! so its shape (and the order of every addition) is the same on every device and run. Its
//! rounding is that of pairwise summation: within `log₂(n)` roundings of the exact sum where a
//! sequential sum can be `n`.
//!
//! The front doors run it as tensor ops on rows (a key names a row of a `[keys, width]`
//! tensor): see [`PairwisePlan::levels`] for the layout they rely on.

use std::collections::HashMap;

/// A group of equal keys and how many nodes it has at one level.
type GroupNodes = (usize, usize);

/// One level of a [`PairwisePlan`]: `nodes` values, the first `parents.len()` of which are
/// added into node `parents[i]` of the next level (at most two into any one), the rest being
/// roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairwiseLevel {
    /// How many values this level holds.
    pub nodes: usize,
    /// For each of the first `parents.len()` nodes, the node of the next level it adds into.
    /// Every node of the next level receives one or two of them.
    pub parents: Vec<usize>,
}

impl PairwiseLevel {
    /// How many of this level's nodes are roots (its last nodes).
    pub fn roots(&self) -> usize {
        self.nodes - self.parents.len()
    }
}

/// How to add the values of each key in one fixed pairwise order (see the module docs).
///
/// Layout, for a plan of `n` values over `k` distinct keys:
/// - level 0 holds the values permuted by [`leaf_order`](Self::leaf_order) (node `i` is value
///   `leaf_order[i]`): the values of keys with two or more values first, grouped by key, each
///   key's values in their order of occurrence, then the values that are alone on their key;
/// - in every level the nodes that still have a parent come first, the roots last;
/// - [`root_keys`](Self::root_keys) lists the `k` keys in the order their roots appear: level
///   0's roots, then level 1's, and so on. Each key appears once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairwisePlan {
    leaf_order: Vec<usize>,
    levels: Vec<PairwiseLevel>,
    root_keys: Vec<usize>,
}

impl PairwisePlan {
    /// The plan for adding value `i` into key `keys[i]`, for every `i`.
    pub fn new(keys: &[usize]) -> Self {
        // Groups of equal keys, numbered in order of first occurrence.
        let (group_of_value, group_keys) = group_by_first_occurrence(keys);
        let groups = group_keys.len();
        let mut counts = vec![0usize; groups];
        for &group in &group_of_value {
            counts[group] += 1;
        }

        // Level 0: keys with several values first, then the lone values; each group's values
        // contiguous and in their order (a counting sort by group).
        let (shared, alone): (Vec<usize>, Vec<usize>) =
            (0..groups).partition(|&group| counts[group] > 1);
        let mut slot = vec![0usize; groups];
        let mut next = 0;
        for &group in shared.iter().chain(&alone) {
            slot[group] = next;
            next += counts[group];
        }
        let mut leaf_order = vec![0usize; keys.len()];
        for (value, &group) in group_of_value.iter().enumerate() {
            leaf_order[slot[group]] = value;
            slot[group] += 1;
        }
        let mut root_keys: Vec<usize> = alone.iter().map(|&group| group_keys[group]).collect();

        // `active`: the groups with two or more nodes at the current level, in node order, with
        // their node counts; their nodes are the level's first, contiguous per group.
        let mut active: Vec<GroupNodes> =
            shared.iter().map(|&group| (group, counts[group])).collect();
        let mut next_start = slot; // reused: each group's first node on the next level
        let mut nodes = keys.len();
        let mut levels = Vec::new();
        while !active.is_empty() {
            // The next level: groups still above one node first, then the new roots.
            let halved: Vec<GroupNodes> = active
                .iter()
                .map(|&(group, count)| (group, count.div_ceil(2)))
                .collect();
            let (still, done): (Vec<GroupNodes>, Vec<GroupNodes>) =
                halved.iter().partition(|&&(_, count)| count > 1);
            let mut next_nodes = 0;
            for &(group, count) in still.iter().chain(&done) {
                next_start[group] = next_nodes;
                next_nodes += count;
            }
            let mut parents = Vec::with_capacity(active.iter().map(|&(_, c)| c).sum());
            for &(group, count) in &active {
                let start = next_start[group];
                parents.extend((0..count).map(|node| start + node / 2));
            }
            levels.push(PairwiseLevel { nodes, parents });
            root_keys.extend(done.iter().map(|&(group, _)| group_keys[group]));
            nodes = next_nodes;
            active = still;
        }
        levels.push(PairwiseLevel {
            nodes,
            parents: Vec::new(),
        });
        Self {
            leaf_order,
            levels,
            root_keys,
        }
    }

    /// Level 0's node `i` is value `leaf_order()[i]`.
    pub fn leaf_order(&self) -> &[usize] {
        &self.leaf_order
    }

    /// Value `i` is level 0's node `leaf_positions()[i]` (the inverse of
    /// [`leaf_order`](Self::leaf_order)).
    pub fn leaf_positions(&self) -> Vec<usize> {
        let mut positions = vec![0; self.leaf_order.len()];
        for (node, &value) in self.leaf_order.iter().enumerate() {
            positions[value] = node;
        }
        positions
    }

    /// Whether level 0 holds the values in their own order (no permutation to apply).
    pub fn leaves_in_order(&self) -> bool {
        self.leaf_order.iter().enumerate().all(|(i, &v)| i == v)
    }

    /// The levels, level 0 (the permuted values) first; the last level has no parents.
    pub fn levels(&self) -> &[PairwiseLevel] {
        &self.levels
    }

    /// Each distinct key once, in the order of the roots (see the type's docs).
    pub fn root_keys(&self) -> &[usize] {
        &self.root_keys
    }

    /// Where each level's roots start in [`root_keys`](Self::root_keys).
    pub fn root_offsets(&self) -> Vec<usize> {
        self.levels
            .iter()
            .scan(0, |offset, level| {
                let start = *offset;
                *offset += level.roots();
                Some(start)
            })
            .collect()
    }

    /// Runs the plan on the host: each key's sum in the plan's order, listed as
    /// [`root_keys`](Self::root_keys). What the front doors compute with tensors; for tests and
    /// for reference.
    pub fn sums<T: Clone + core::ops::Add<Output = T>>(&self, values: &[T]) -> Vec<T> {
        assert_eq!(values.len(), self.leaf_order.len(), "one value per key");
        let mut level: Vec<T> = self.leaf_order.iter().map(|&v| values[v].clone()).collect();
        let mut roots = Vec::with_capacity(self.root_keys.len());
        for (index, plan) in self.levels.iter().enumerate() {
            roots.extend_from_slice(&level[plan.parents.len()..]);
            if let Some(next) = self.levels.get(index + 1) {
                let mut sums: Vec<Option<T>> = vec![None; next.nodes];
                for (node, &parent) in plan.parents.iter().enumerate() {
                    let value = level[node].clone();
                    sums[parent] = Some(match sums[parent].take() {
                        Some(sum) => sum + value,
                        None => value,
                    });
                }
                level = sums
                    .into_iter()
                    .map(|sum| sum.expect("every node of a level has a child"))
                    .collect();
            }
        }
        roots
    }
}

/// Each value's group and each group's key, groups numbered by first occurrence. Keys in a
/// range not much larger than their count are looked up in a table, others hashed.
fn group_by_first_occurrence(keys: &[usize]) -> (Vec<usize>, Vec<usize>) {
    const NEW: usize = usize::MAX;
    let mut group_keys = Vec::new();
    let span = keys.iter().max().map_or(0, |&max| max + 1);
    let group_of_value = if span <= 4 * keys.len() + 4096 {
        let mut group_of_key = vec![NEW; span];
        keys.iter()
            .map(|&key| {
                if group_of_key[key] == NEW {
                    group_of_key[key] = group_keys.len();
                    group_keys.push(key);
                }
                group_of_key[key]
            })
            .collect()
    } else {
        let mut group_of_key: HashMap<usize, usize> = HashMap::with_capacity(keys.len());
        keys.iter()
            .map(|&key| {
                *group_of_key.entry(key).or_insert_with(|| {
                    group_keys.push(key);
                    group_keys.len() - 1
                })
            })
            .collect()
    };
    (group_of_value, group_keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(seed: u64, n: usize, distinct: usize) -> Vec<usize> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % distinct as u64) as usize
            })
            .collect()
    }

    /// Every structural promise of the plan, for one key sequence.
    fn check(keys: &[usize]) {
        let plan = PairwisePlan::new(keys);
        // Level 0 is a permutation of the values.
        let mut order = plan.leaf_order().to_vec();
        order.sort_unstable();
        assert_eq!(order, (0..keys.len()).collect::<Vec<_>>());
        let positions = plan.leaf_positions();
        for (value, &node) in positions.iter().enumerate() {
            assert_eq!(plan.leaf_order()[node], value);
        }
        // Every node of a level receives one or two values from the level below.
        for pair in plan.levels().windows(2) {
            let mut received = vec![0usize; pair[1].nodes];
            for &parent in &pair[0].parents {
                received[parent] += 1;
            }
            assert!(received.iter().all(|&r| r == 1 || r == 2), "{received:?}");
        }
        assert!(plan.levels().last().unwrap().parents.is_empty());
        // Each distinct key is one root.
        let mut roots = plan.root_keys().to_vec();
        roots.sort_unstable();
        let mut distinct = keys.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(roots, distinct);
        let offsets = plan.root_offsets();
        assert_eq!(offsets.len(), plan.levels().len());
        // The sums are exact on integers (any order gives the exact sum) and each key's.
        let values: Vec<i64> = (0..keys.len() as i64).map(|v| v * v - 7).collect();
        let sums = plan.sums(&values);
        for (root, &key) in plan.root_keys().iter().enumerate() {
            let exact: i64 = keys
                .iter()
                .zip(&values)
                .filter(|(&k, _)| k == key)
                .map(|(_, &v)| v)
                .sum();
            assert_eq!(sums[root], exact, "key {key}");
        }
    }

    #[test]
    fn plans_add_every_value_of_a_key_once_and_never_three_at_a_time() {
        check(&[]);
        check(&[5]);
        check(&[3, 3]);
        check(&[0, 1, 2, 3]);
        check(&[7; 1000]);
        check(&[4, 4, 4, 1, 9, 4, 1, 0, 4]);
        for (seed, n, distinct) in [(1, 100, 3), (2, 1000, 1000), (3, 5000, 17), (4, 777, 400)] {
            check(&keys(seed, n, distinct));
        }
        // Keys spread far wider than their count (hashed, not tabled).
        let sparse: Vec<usize> = keys(5, 300, 40).iter().map(|k| k * 1_000_003).collect();
        check(&sparse);
    }

    #[test]
    fn a_key_adds_its_values_in_occurrence_order_pairwise() {
        // Key 0 holds values 0, 2, 3, 5, 6 (in that order): ((v0 + v2) + (v3 + v5)) + v6.
        let plan = PairwisePlan::new(&[0, 1, 0, 0, 2, 0, 0]);
        let order = plan.sums(
            &["a", "b", "c", "d", "e", "f", "g"]
                .map(String::from)
                .map(Tree),
        );
        let key0 = plan.root_keys().iter().position(|&k| k == 0).unwrap();
        assert_eq!(order[key0].0, "((a+c)+(d+f))+g");
        assert_eq!(plan.levels().len(), 4);
    }

    #[test]
    fn unique_keys_are_roots_at_level_zero_in_value_order() {
        let plan = PairwisePlan::new(&[9, 4, 6]);
        assert!(plan.leaves_in_order());
        assert_eq!(plan.levels().len(), 1);
        assert_eq!(plan.root_keys(), &[9, 4, 6]);
    }

    /// A value that prints the order it was added in.
    #[derive(Clone, Debug)]
    struct Tree(String);

    impl core::ops::Add for Tree {
        type Output = Tree;
        fn add(self, other: Tree) -> Tree {
            let wrap = |t: String| if t.len() > 1 { format!("({t})") } else { t };
            Tree(format!("{}+{}", wrap(self.0), wrap(other.0)))
        }
    }
}
