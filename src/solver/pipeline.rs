//! Two threads through one sweep of the levelled kinds, each waiting only for what it reads.
//!
//! A sweep projects the span limits, the stretch, the shear and the bending one after another,
//! each kind in the levels of its order ([`crate::solver::levels`]). A level is seldom wide enough to be
//! worth splitting among threads (a 64 × 64 grid's edges: 24 per level), and a join per level
//! costs more than the level. But a thread need not wait for the whole level before it: it needs
//! only the constraints, earlier in the sweep, that share a particle with its own.
//!
//! So each level of each kind is split in two parts, one per thread, and each thread runs its
//! parts in the sweep's order (kinds in turn, levels in turn, backward for a backward sweep).
//! Before a part, a thread waits until the other thread has finished every part of its own that
//! holds an earlier constraint sharing a particle with this one: a count of finished parts,
//! published by the other thread ([`Pipeline::new`] works out, once, how many each part needs).
//! Every constraint then reads and writes exactly what the serial sweep has it read and write,
//! so the numbers are those of the serial sweep, bit for bit, on any thread count and whatever
//! the timing. A thread that waits reads the other's count again only when the count it last
//! saw is too low.
//!
//! Any split gives those numbers; how often a thread waits depends on it. [`Halves`] cuts the
//! cloth in two halves at the median along its longest axis, so the threads meet only along the
//! cut. On the standard scene's 64 × 64 grid (its own, row by row, order) they wait for each
//! other 20–30 times per sweep, and the projection stage falls by about a fifth on two cores
//! (docs/solver.md, "Pipelined sweeps").
//!
//! The two lists start as rayon tasks. Whichever task starts first takes the first list; if the
//! second has not started when the first must wait for it (a pool with one thread, or a busy
//! one), the first takes it as well and runs the two lists in turn, which never waits. So the
//! sweep never deadlocks, whatever the pool. And since a waiting thread spins, a sweep runs on
//! the calling thread alone, the two lists in turn, when that was faster over the recent sweeps
//! (a core busy with another program; [`Pipeline::sweep`]).

use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::constraints::{Bend, Distance, Shear, SpanLimit};
use crate::math::{Real, Vec3};
use crate::solver::batch::SharedSlice;
use crate::solver::levels::{
    bend_run, shear_run, span_run, stretch_run, Counts, Levels, Pass, Positions, StretchPass,
};

/// The kinds the pipeline sweeps, in the sweep's order: span limits, stretch, shear, bending.
pub(crate) const KINDS: usize = 4;

/// The average stretch constraints per level below which a cloth is not pipelined: each thread
/// would get too little of a level (and a padded tail of lanes per part). On the standard scene
/// the pipelined projection took 3.2 ms per frame at N = 32 (12 edges per level) against 2.7–2.9
/// for the vector sweeps, and 7.3–9.4 against 10.2–10.5 at N = 64 (24 per level).
pub(crate) const MIN_LEVEL_WIDTH: usize = 4 * crate::solver::levels::LANES;

/// Particles per stencil at most (a hinge's four); shorter stencils are padded with
/// [`NO_PARTICLE`].
pub(crate) const STENCIL: usize = 4;

/// Padding of a stencil shorter than [`STENCIL`].
pub(crate) const NO_PARTICLE: u32 = u32::MAX;

/// One thread's part of one level of one kind: a range of the kind's sorted list, and how many
/// of the other thread's parts must be finished first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    /// Index of the kind (span limits, stretch, shear, bending).
    pub kind: u8,
    /// The range of the kind's sorted list.
    pub start: u32,
    pub end: u32,
    /// The other thread's finished parts this part waits for.
    pub need: u32,
}

impl Part {
    pub(crate) fn range(&self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// The two threads' parts of a forward and of a backward sweep.
#[derive(Clone, Debug, Default)]
pub struct Pipeline {
    /// `plans[reverse][thread]`: the thread's parts in running order.
    plans: [[Vec<Part>; 2]; 2],
    /// Recent sweep times on two threads and on one, to choose between them.
    pace: Pace,
}

/// Recent sweep times on two threads and on one ([`Pipeline::sweep`]).
#[derive(Clone, Copy, Debug, Default)]
struct Pace {
    /// Sweeps run so far.
    sweeps: u64,
    /// Running averages of a sweep's wall time on two threads and on one (s); 0 until measured.
    two_s: f64,
    one_s: f64,
}

/// Every this many sweeps the way not chosen runs once, to measure it again.
const PROBE_EVERY: u64 = 32;

/// Weight of the newest sweep in [`Pace`]'s running averages.
const PACE_WEIGHT: f64 = 0.2;

impl Pace {
    /// Whether the next sweep runs on two threads: the faster of the two recently, the other
    /// one every [`PROBE_EVERY`] sweeps; the first sweep on two threads, the second on one.
    fn two_threads(&self) -> bool {
        match self.sweeps {
            0 => true,
            1 => false,
            n => (self.two_s <= self.one_s) != (n % PROBE_EVERY == 0),
        }
    }

    fn record(&mut self, two: bool, seconds: f64) {
        let average = if two {
            &mut self.two_s
        } else {
            &mut self.one_s
        };
        *average = if *average == 0.0 {
            seconds
        } else {
            (1.0 - PACE_WEIGHT) * *average + PACE_WEIGHT * seconds
        };
        self.sweeps += 1;
    }
}

/// One kind as [`Pipeline::new`] reads it: each constraint's particles (padded with
/// [`NO_PARTICLE`]) in the order of its list, and for each level of the sweep's order the
/// ranges of the list that hold its two parts (no two constraints of a level share a particle).
pub(crate) struct KindParts<'a> {
    pub stencils: &'a [[u32; STENCIL]],
    pub levels: &'a [[Range<usize>; 2]],
}
impl Pipeline {
    /// The parts of each kind's levels and what each waits for, forward and backward. `None`
    /// when the two threads would have nothing to share (one of them has no part) or a kind's
    /// split does not match its levels.
    pub(crate) fn new(kinds: &[KindParts<'_>; KINDS], particle_count: usize) -> Option<Self> {
        let fits = |k: &KindParts<'_>| {
            (k.levels.iter().flatten()).all(|r| r.start <= r.end && r.end <= k.stencils.len())
                && (k.stencils.iter().flatten())
                    .all(|&p| p == NO_PARTICLE || (p as usize) < particle_count)
        };
        if !kinds.iter().all(fits) {
            return None;
        }
        let plans = [false, true].map(|reverse| plan(kinds, particle_count, reverse));
        let pipeline = Self {
            plans,
            pace: Pace::default(),
        };
        (pipeline
            .plans
            .iter()
            .all(|p| !p[0].is_empty() && !p[1].is_empty())
            && pipeline.plans.iter().all(runs_to_the_end))
        .then_some(pipeline)
    }

    /// The parts of one sweep, `[thread 0, thread 1]`.
    pub(crate) fn parts(&self, reverse: bool) -> &[Vec<Part>; 2] {
        &self.plans[usize::from(reverse)]
    }

    /// Runs one sweep: `run(part)` for every part, each after the parts it waits for, on two of
    /// rayon's threads (or one, see the module's documentation). `run` gets the list's
    /// accumulator, which is returned for each list.
    ///
    /// A thread that waits for the other spins, so two threads are slower than one when the
    /// other thread is often off its core (another program busy on a 2-core machine: the
    /// standard scene's projection took 17–19 ms per frame on two threads against 11.5 on one).
    /// So the sweep runs on two threads or on one, whichever took less time over the recent
    /// sweeps, and the other way once every [`PROBE_EVERY`] sweeps to see whether that changed.
    /// The numbers are the same either way; only the time differs.
    pub(crate) fn sweep<A: Default + Send>(
        &mut self,
        reverse: bool,
        run: impl Fn(&Part, &mut A) + Sync,
    ) -> [A; 2] {
        let two = self.pace.two_threads();
        let started = std::time::Instant::now();
        let plan = self.parts(reverse);
        let out = if two {
            let shared = Shared::default();
            let worker = || work(plan, &shared, &run, false);
            let (a, b) = rayon::join(worker, worker);
            // Each list's accumulator comes back from whichever task ran it.
            let [a0, a1] = a;
            let [b0, b1] = b;
            [a0.or(b0), a1.or(b1)]
        } else {
            work(plan, &Shared::default(), &run, true)
        };
        self.pace.record(two, started.elapsed().as_secs_f64());
        out.map(Option::unwrap_or_default)
    }
}

/// The parts of every kind's levels, per thread, in the order of a forward or backward sweep,
/// and for each the count of the other thread's parts it waits for.
fn plan(kinds: &[KindParts<'_>; KINDS], particle_count: usize, reverse: bool) -> [Vec<Part>; 2] {
    // The last part that touched each particle: (thread, index among the thread's parts).
    let mut last: Vec<Option<(usize, u32)>> = vec![None; particle_count];
    let mut parts: [Vec<Part>; 2] = [Vec::new(), Vec::new()];
    for (kind, k) in kinds.iter().enumerate() {
        let n = k.levels.len();
        for i in 0..n {
            let ranges = &k.levels[if reverse { n - 1 - i } else { i }];
            let index = [parts[0].len() as u32, parts[1].len() as u32];
            for (t, range) in ranges.iter().enumerate() {
                if range.is_empty() {
                    continue;
                }
                let need = (k.stencils[range.clone()].iter().flatten())
                    .filter(|&&p| p != NO_PARTICLE)
                    .filter_map(|&p| last[p as usize])
                    .filter(|&(owner, _)| owner != t)
                    .map(|(_, part)| part + 1)
                    .max()
                    .unwrap_or(0);
                parts[t].push(Part {
                    kind: kind as u8,
                    start: range.start as u32,
                    end: range.end as u32,
                    need,
                });
            }
            // The two parts of a level share no particle, so their order here does not matter.
            for (t, range) in ranges.iter().enumerate() {
                for &p in k.stencils[range.clone()].iter().flatten() {
                    if p != NO_PARTICLE {
                        last[p as usize] = Some((t, index[t]));
                    }
                }
            }
        }
    }
    parts
}

/// Whether one thread running both lists in turn gets through them (no part waits for a part
/// that waits for it). True by construction, since a part waits only for earlier levels;
/// checked once, so that a mistake cannot hang a sweep.
fn runs_to_the_end(plan: &[Vec<Part>; 2]) -> bool {
    let mut done = [0usize; 2];
    loop {
        let mut moved = false;
        for t in 0..2 {
            while done[t] < plan[t].len() && plan[t][done[t]].need as usize <= done[1 - t] {
                done[t] += 1;
                moved = true;
            }
        }
        if done[0] == plan[0].len() && done[1] == plan[1].len() {
            return true;
        }
        if !moved {
            return false;
        }
    }
}

/// A counter on a cache line of its own, so that one thread's count does not evict the other's.
#[derive(Default)]
#[repr(align(128))]
struct Padded(AtomicU32);

/// What the two tasks of a sweep share.
#[derive(Default)]
struct Shared {
    /// Each thread's finished parts.
    done: [Padded; 2],
    /// How many of the two threads' lists have been taken.
    taken: AtomicU32,
}

/// Spins before a waiting thread takes the other list when no task has taken it.
const TAKEOVER_SPINS: u32 = 1 << 10;

/// Spins before a waiting thread yields its core.
const SPINS_BEFORE_YIELD: u32 = 1 << 12;

/// One rayon task of a sweep: takes a thread's list (or nothing, when both are taken) and runs
/// it, taking and running the other list as well if that one has not been taken when it must
/// wait for it; `alone`, runs both lists, in turn, on the calling thread. Returns the
/// accumulator of each list it ran, by list (no allocation: the solver sweeps in its substep
/// loop).
fn work<A: Default>(
    plan: &[Vec<Part>; 2],
    shared: &Shared,
    run: &impl Fn(&Part, &mut A),
    alone: bool,
) -> [Option<A>; 2] {
    // Alone: both lists, from the start.
    let me = if alone {
        0
    } else {
        shared.taken.fetch_add(1, Ordering::AcqRel) as usize
    };
    if me >= 2 {
        return [None, None];
    }
    let other = 1 - me;
    let mut acc = [A::default(), A::default()];
    let mut next = [0usize; 2];
    let mut both = alone;
    // The other thread's count as last read.
    let mut seen = 0u32;
    let mut spins = 0u32;
    loop {
        if next[me] < plan[me].len() {
            let part = &plan[me][next[me]];
            let ready = if both {
                part.need as usize <= next[other]
            } else {
                if part.need > seen {
                    seen = shared.done[other].0.load(Ordering::Acquire);
                }
                part.need <= seen
            };
            if ready {
                run(part, &mut acc[me]);
                next[me] += 1;
                spins = 0;
                if !both {
                    shared.done[me].0.store(next[me] as u32, Ordering::Release);
                }
                continue;
            }
        } else if !both {
            break;
        }
        if both {
            // Only the other list's next part can be ready (ours is done or waits for it).
            match plan[other].get(next[other]) {
                Some(part) if part.need as usize <= next[me] => {
                    run(part, &mut acc[other]);
                    next[other] += 1;
                }
                Some(_) => unreachable!("checked by `runs_to_the_end` when the pipeline was built"),
                None if next[me] == plan[me].len() => break,
                None => unreachable!("checked by `runs_to_the_end` when the pipeline was built"),
            }
            continue;
        }
        // Our next part waits for the other list. Has anyone taken it? (Give the other task
        // time to start first.)
        if spins >= TAKEOVER_SPINS
            && (shared.taken)
                .compare_exchange(1, 2, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            both = true;
            continue;
        }
        spins += 1;
        if spins < SPINS_BEFORE_YIELD {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let [a, b] = acc;
    let mut out = [Some(a), Some(b)];
    if !both {
        out[other] = None;
    }
    out
}

/// Which thread each particle's constraints go to: the cloth cut in two halves of equal count
/// (side 0 one more when the count is odd) at the median of the rest positions along the axis of
/// their largest extent (`side[p]` 0 below, 1 above; ties by index; `batch::slabs_of` with two
/// slabs). A constraint goes to side 0 when any of its particles does. The two halves meet only
/// along the cut: on the standard scene's 64 × 64 grid the threads wait for each other 20–30
/// times in a sweep of about 2,000 levels.
pub(crate) struct Halves {
    pub side: Vec<u8>,
}

impl Halves {
    /// See [`Halves`].
    pub(crate) fn new(positions: &[Vec3]) -> Self {
        Self {
            side: crate::solver::batch::slabs_of(positions, 2),
        }
    }

    /// A constraint's side: 0 when any of its particles is on side 0.
    fn side_of(&self, stencil: &[u32]) -> usize {
        let zero = (stencil.iter()).any(|&p| self.side.get(p as usize) == Some(&0));
        usize::from(!zero)
    }

    /// Regroups `items` (sorted into `levels`) into each level's side-0 constraints, level
    /// after level, then each level's side-1 constraints, and returns each level's two ranges.
    /// The two threads' multipliers then lie apart in memory (within a level they would share
    /// cache lines); within a level the order does not change the numbers.
    pub(crate) fn split_levels<T: Copy, const K: usize>(
        &self,
        items: &mut Vec<T>,
        levels: &Levels,
        particles: impl Fn(&T) -> [u32; K],
    ) -> Vec<[Range<usize>; 2]> {
        let side_of = |c: &T| self.side_of(&particles(c));
        let mut grouped = Vec::with_capacity(items.len());
        let mut ranges = vec![[0..0, 0..0]; levels.count()];
        for side in 0..2 {
            for (k, r) in ranges.iter_mut().enumerate() {
                let start = grouped.len();
                let level = &items[levels.offsets[k]..levels.offsets[k + 1]];
                grouped.extend(level.iter().filter(|c| side_of(c) == side));
                r[side] = start..grouped.len();
            }
        }
        *items = grouped;
        ranges
    }
}

/// A stencil padded to [`STENCIL`] particles.
pub(crate) fn padded<const K: usize>(particles: [u32; K]) -> [u32; STENCIL] {
    let mut s = [NO_PARTICLE; STENCIL];
    s[..K].copy_from_slice(&particles);
    s
}

/// The four kinds' sorted lists and multipliers for [`project_pipelined`], in the sweep's
/// order.
pub(crate) struct Kinds<'a> {
    pub span_limits: (&'a [SpanLimit], &'a mut [Real]),
    pub stretch: (&'a [Distance], &'a mut [Real]),
    pub shear: (&'a [Shear], &'a mut [Real]),
    pub bend: (&'a [Bend], &'a mut [Real]),
}

/// Projects the span limits, stretch, shear and bending once, on two threads through the
/// `pipeline`'s parts: bit for bit the serial sweep of each list in its
/// order, the kinds one after another (the levels run backward when `pass.reverse`). Each list
/// is sorted into the levels the pipeline was built from. Returns the counts of the stretch,
/// shear and bending (span limits count nothing).
pub(crate) fn project_pipelined<P: Positions>(
    x: P,
    w: &[Real],
    kinds: Kinds<'_>,
    pipeline: &mut Pipeline,
    pass: Pass,
    stretch: StretchPass,
) -> [Counts; 3] {
    let Kinds {
        span_limits: (span, l_span),
        stretch: (edges, l_stretch),
        shear: (shear, l_shear),
        bend: (bend, l_bend),
    } = kinds;
    let (l_span, l_stretch) = (SharedSlice::new(l_span), SharedSlice::new(l_stretch));
    let (l_shear, l_bend) = (SharedSlice::new(l_shear), SharedSlice::new(l_bend));
    let counts = pipeline.sweep(pass.reverse, |part, acc: &mut [Counts; 3]| {
        let r = part.range();
        // SAFETY: the parts running at once on the two threads share no particle (a part
        // waits for every earlier part of the other thread that shares one, and a level's two
        // parts share none) and cover distinct ranges of each list, so no element of `x` or of
        // a multiplier list is used by both; the indices were checked when the solver was
        // built, and `range_mut` checks the range.
        unsafe {
            match part.kind {
                0 => span_run(x, w, &span[r.clone()], l_span.range_mut(r)),
                1 => {
                    let l = l_stretch.range_mut(r.clone());
                    acc[0] = acc[0].merge(stretch_run(x, w, &edges[r], l, pass.h, stretch));
                }
                2 => {
                    let d = shear_run(x, w, &shear[r.clone()], l_shear.range_mut(r), pass.h);
                    acc[1] = acc[1].merge(Counts::skipped(d));
                }
                _ => {
                    let d = bend_run(x, w, &bend[r.clone()], l_bend.range_mut(r), pass.h);
                    acc[2] = acc[2].merge(Counts::skipped(d));
                }
            }
        }
    });
    let [a, b] = counts;
    [0, 1, 2].map(|k| a[k].merge(b[k]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::batch::SharedSlice;

    /// A grid's edges (row by row: each row's horizontal edges, then the vertical ones to the
    /// next row) and triangles, in the mesh's order, with its rest positions.
    fn grid(n: u32) -> (Vec<Vec3>, Vec<[u32; 2]>, Vec<[u32; 3]>) {
        let at = |i: u32, j: u32| i * n + j;
        let positions = (0..n * n)
            .map(|p| Vec3::new((p % n) as f32, 0.0, (p / n) as f32))
            .collect();
        let (mut edges, mut triangles) = (Vec::new(), Vec::new());
        for i in 0..n {
            for j in 0..n {
                if j + 1 < n {
                    edges.push([at(i, j), at(i, j + 1)]);
                }
                if i + 1 < n {
                    edges.push([at(i, j), at(i + 1, j)]);
                    if j + 1 < n {
                        triangles.push([at(i, j), at(i + 1, j), at(i, j + 1)]);
                        triangles.push([at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)]);
                    }
                }
            }
        }
        (positions, edges, triangles)
    }

    /// The serial order of a sweep: kind after kind, level after level (backward when
    /// `reverse`), each level's two parts in turn: (kind, index in the kind's list).
    fn serial_order(kinds: &[KindParts<'_>; KINDS], reverse: bool) -> Vec<(usize, usize)> {
        let mut order = Vec::new();
        for (k, kind) in kinds.iter().enumerate() {
            let n = kind.levels.len();
            for i in 0..n {
                for r in &kind.levels[if reverse { n - 1 - i } else { i }] {
                    order.extend(r.clone().map(|c| (k, c)));
                }
            }
        }
        order
    }

    struct Built {
        stencils: [Vec<[u32; STENCIL]>; KINDS],
        levels: [Vec<[Range<usize>; 2]>; KINDS],
        particles: usize,
    }

    impl Built {
        /// A grid's edges as kind 1 and triangles as kind 2 (kinds 0 and 3 empty), levelled and
        /// split into halves as the solver does.
        fn grid(n: u32) -> Self {
            let (positions, mut edges, mut triangles) = grid(n);
            let count = positions.len();
            let halves = Halves::new(&positions);
            let edge_levels = Levels::new(&mut edges, |e| *e, count);
            let triangle_levels = Levels::new(&mut triangles, |t| *t, count);
            let edge_parts = halves.split_levels(&mut edges, &edge_levels, |e| *e);
            let triangle_parts = halves.split_levels(&mut triangles, &triangle_levels, |t| *t);
            Self {
                stencils: [
                    Vec::new(),
                    edges.iter().map(|e| padded(*e)).collect(),
                    triangles.iter().map(|t| padded(*t)).collect(),
                    Vec::new(),
                ],
                levels: [Vec::new(), edge_parts, triangle_parts, Vec::new()],
                particles: count,
            }
        }

        fn kinds(&self) -> [KindParts<'_>; KINDS] {
            std::array::from_fn(|k| KindParts {
                stencils: &self.stencils[k],
                levels: &self.levels[k],
            })
        }
    }

    #[test]
    fn halves_cut_a_cloth_in_two_equal_halves_across_its_longest_axis() {
        // 6 wide along x, 3 deep along z: the cut runs across x.
        let positions: Vec<Vec3> = (0..18)
            .map(|p| Vec3::new((p % 6) as f32, 0.0, (p / 6) as f32))
            .collect();
        let halves = Halves::new(&positions);
        assert_eq!(halves.side.iter().filter(|&&s| s == 0).count(), 9);
        for (p, &s) in halves.side.iter().enumerate() {
            assert_eq!(s, u8::from(p % 6 >= 3), "particle {p}");
        }
        // An edge across the cut goes to side 0, one within side 1 to side 1.
        assert_eq!(halves.side_of(&[2, 3]), 0);
        assert_eq!(halves.side_of(&[3, 4]), 1);
    }

    /// Every constraint runs after every earlier constraint of the serial sweep that shares a
    /// particle with it: on its own thread by the parts' order, on the other by the `need` of
    /// this part or an earlier one of its thread.
    #[test]
    fn a_part_waits_for_every_earlier_part_of_the_other_thread_it_shares_a_particle_with() {
        let built = Built::grid(12);
        let kinds = built.kinds();
        let pipeline = Pipeline::new(&kinds, built.particles).expect("pipeline");
        for reverse in [false, true] {
            let parts = pipeline.parts(reverse);
            assert!(parts.iter().all(|p| !p.is_empty()), "a thread has no work");
            // Where each constraint runs: (thread, part index).
            let mut place = std::collections::HashMap::new();
            for (t, list) in parts.iter().enumerate() {
                for (i, part) in list.iter().enumerate() {
                    for c in part.range() {
                        assert!(place.insert((part.kind as usize, c), (t, i)).is_none());
                    }
                }
            }
            let order = serial_order(&kinds, reverse);
            assert_eq!(place.len(), order.len(), "every constraint in one part");
            let mut waits = 0;
            for (n, &(k, c)) in order.iter().enumerate() {
                let (t, i) = place[&(k, c)];
                let stencil = kinds[k].stencils[c];
                for &(k2, c2) in &order[..n] {
                    let shares = (kinds[k2].stencils[c2].iter())
                        .any(|p| *p != NO_PARTICLE && stencil.contains(p));
                    if !shares {
                        continue;
                    }
                    let (t2, i2) = place[&(k2, c2)];
                    if t2 == t {
                        assert!(i2 < i, "same thread, later part");
                    } else {
                        // A thread learns how far the other got only by its own waits.
                        let waited = parts[t][..=i].iter().map(|p| p.need).max();
                        assert!(waited.unwrap_or(0) as usize > i2, "part does not wait");
                        waits += 1;
                    }
                }
            }
            assert!(waits > 0, "the halves never meet");
            // And a part waits for no more than it must: its `need` is an earlier part
            // sharing a particle (checked above as a lower bound; here, tight).
            for (t, list) in parts.iter().enumerate() {
                for part in list.iter().filter(|p| p.need > 0) {
                    let wanted = &parts[1 - t][part.need as usize - 1];
                    let shares = part.range().any(|c| {
                        wanted.range().any(|c2| {
                            (kinds[wanted.kind as usize].stencils[c2].iter()).any(|p| {
                                *p != NO_PARTICLE
                                    && kinds[part.kind as usize].stencils[c].contains(p)
                            })
                        })
                    });
                    assert!(shares, "a part waits for a part it shares nothing with");
                }
            }
        }
    }

    /// Runs the pipeline's sweeps with a projection whose result depends on the order (each
    /// constraint mixes its particles' values), on pools of 1, 2 and 3 threads, against the
    /// same projection in the serial order: equal bit for bit. On one thread the first task
    /// takes both lists.
    #[test]
    fn pipelined_sweeps_are_the_serial_sweep_bit_for_bit_on_one_two_and_three_threads() {
        let built = Built::grid(16);
        let kinds = built.kinds();
        let mut pipeline = Pipeline::new(&kinds, built.particles).expect("pipeline");
        let start: Vec<Vec3> = (0..built.particles)
            .map(|p| Vec3::new(p as f32 * 0.37, 1.0 / (p + 1) as f32, (p % 7) as f32))
            .collect();
        let mix = |x: SharedSlice<'_, Vec3>, stencil: &[u32; STENCIL], k: usize| {
            let live: Vec<usize> = (stencil.iter())
                .filter(|&&p| p != NO_PARTICLE)
                .map(|&p| p as usize)
                .collect();
            // SAFETY: the test's constraints touch only their own particles, all in range,
            // and the pipeline runs no two sharing one at once (what the test checks).
            unsafe {
                let sum = live.iter().fold(Vec3::ZERO, |s, &p| s + x.get(p));
                for (i, &p) in live.iter().enumerate() {
                    let d = sum * (0.01 * (i + k) as f32) - x.get(p) * 0.3;
                    x.add(p, d);
                }
            }
        };
        let mut serial = start.clone();
        for reverse in [false, true, false, true] {
            let xs = SharedSlice::new(&mut serial);
            for (k, c) in serial_order(&kinds, reverse) {
                mix(xs, &kinds[k].stencils[c], k);
            }
        }
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let mut x = start.clone();
            let counted = pool.install(|| {
                let xs = SharedSlice::new(&mut x);
                let mut counted = 0;
                for reverse in [false, true, false, true] {
                    let [a, b] = pipeline.sweep(reverse, |part, n: &mut usize| {
                        for c in part.range() {
                            mix(
                                xs,
                                &kinds[part.kind as usize].stencils[c],
                                part.kind as usize,
                            );
                        }
                        *n += part.range().len();
                    });
                    counted += a + b;
                }
                counted
            });
            let total: usize = kinds.iter().map(|k| k.stencils.len()).sum();
            assert_eq!(
                counted,
                4 * total,
                "{threads} threads: each constraint once per sweep"
            );
            let bits = |x: &[Vec3]| -> Vec<[u32; 3]> {
                x.iter().map(|p| p.to_array().map(f32::to_bits)).collect()
            };
            assert!(
                bits(&x) == bits(&serial),
                "{threads} threads differ from the serial sweep"
            );
        }
    }

    #[test]
    fn a_split_with_an_empty_half_or_a_bad_range_gives_no_pipeline() {
        let built = Built::grid(8);
        // Every constraint on thread 0.
        let (positions, mut edges, _) = grid(8);
        let levels = Levels::new(&mut edges, |e| *e, positions.len());
        let one_sided = Built {
            stencils: [
                vec![],
                edges.iter().map(|e| padded(*e)).collect(),
                vec![],
                vec![],
            ],
            levels: [
                vec![],
                (0..levels.count())
                    .map(|k| {
                        let (lo, hi) = (levels.offsets[k], levels.offsets[k + 1]);
                        [lo..hi, hi..hi]
                    })
                    .collect(),
                vec![],
                vec![],
            ],
            particles: positions.len(),
        };
        assert!(Pipeline::new(&one_sided.kinds(), one_sided.particles).is_none());
        let mut bad = Built::grid(8);
        bad.levels[1][0][1].end = bad.stencils[1].len() + 1;
        assert!(Pipeline::new(&bad.kinds(), bad.particles).is_none());
        assert!(Pipeline::new(&built.kinds(), built.particles - 1).is_none());
        assert!(Pipeline::new(&built.kinds(), built.particles).is_some());
    }
}
