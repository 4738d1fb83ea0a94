//! The statistics of a timing campaign, in one place: the plan from calibration,
//! disturbed-trial detection, and the aggregates every record and page shows.

use serde::{Deserialize, Serialize};

pub use crate::evidence::domain::PlanSpec;

impl PlanSpec {
    pub fn reference(trial_target_s: f64) -> PlanSpec {
        PlanSpec { trials: 5, trial_target_s, min_total_ops: 100, max_iterations: 20_000, max_reruns: 2 }
    }

    /// CI: the same record format, seconds instead of minutes.
    pub fn quick() -> PlanSpec {
        PlanSpec { trials: 3, trial_target_s: 0.05, min_total_ops: 9, max_iterations: 20_000, max_reruns: 1 }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Plan {
    pub iterations: u64,
    pub warmups: u64,
}

/// Iterations per trial so that one trial lasts about the target, the whole run has
/// at least `min_total_ops` operations, and no trial exceeds `max_iterations`.
/// Warm-ups by operation length: 3 under 50 ms, 1 under 5 s, else none.
pub fn plan(spec: &PlanSpec, ns_per_op: f64) -> Plan {
    let per_op = ns_per_op.max(1.0);
    let for_target = (spec.trial_target_s * 1e9 / per_op).floor() as u64;
    let for_total = spec.min_total_ops.div_ceil(u64::from(spec.trials.max(1)));
    let iterations = for_target.max(for_total).clamp(1, spec.max_iterations);
    let warmups = if per_op < 50e6 { 3 } else { u64::from(per_op < 5e9) };
    Plan { iterations, warmups }
}

// ---- Time budgets: the counts a budget allows, and the floor of a verdict

/// A step's time budget for one operation, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeBudget {
    pub per_op: std::time::Duration,
    pub source: String,
}

impl TimeBudget {
    /// The operator's `--budget` of one command.
    pub fn given(per_op: std::time::Duration) -> TimeBudget {
        TimeBudget { per_op, source: "--budget".into() }
    }

    /// A campaign's `--budget` in equal shares over its `ops` timed operations (each
    /// operation's cost is not known before it is timed; an equal share is the one
    /// division that needs no guess). None without operations.
    pub fn share(total: std::time::Duration, ops: u64) -> Option<TimeBudget> {
        let n = u32::try_from(ops).ok().filter(|&n| n > 0)?;
        let source = format!("campaign --budget {}: an equal share of {ops} timed operations", humantime_secs(total));
        Some(TimeBudget { per_op: total / n, source })
    }

    pub fn ns(&self) -> f64 {
        self.per_op.as_nanos() as f64
    }
}

/// `1h 30m`, as `--budget` takes it (whole seconds).
pub fn humantime_secs(d: std::time::Duration) -> String {
    humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string()
}

/// Units of `unit_ns` each that fit in `budget_ns`, at most `cap`; none for a unit that
/// is not a positive time.
pub fn fits(budget_ns: f64, unit_ns: f64, cap: u64) -> u64 {
    if unit_ns.is_nan() || unit_ns <= 0.0 || budget_ns.is_nan() || budget_ns <= 0.0 {
        return 0;
    }
    // `as` saturates: an infinite quotient is u64::MAX, then the cap.
    ((budget_ns / unit_ns).floor() as u64).min(cap)
}

/// A budgeted run that outlasts its budget by this factor (and `OVERRUN_SLACK`, for a
/// process's start) is stopped where it stands: what it took longer for than its
/// calibration said is not measured further (ct's run, bench's next trial).
pub const OVERRUN: u32 = 2;
pub const OVERRUN_SLACK: std::time::Duration = std::time::Duration::from_secs(10);

/// Past the point where a run of `budget` is stopped.
pub fn overrun(budget: std::time::Duration, elapsed: std::time::Duration) -> bool {
    elapsed > budget * OVERRUN + OVERRUN_SLACK
}

/// bench's floor: fewer kept trials than the quick plan's three leave `disturbed`
/// nothing to judge by (of two trials, each is as far from their median as the other),
/// so a budget that fits fewer gives "not enough measurements", not figures.
pub const TRIALS_FLOOR: u64 = 3;

/// Trials and iterations within a budget (`bench`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fitted {
    pub trials: u64,
    pub iterations: u64,
    pub enough: bool,
}

/// The plan's trials of `plan`'s iterations (and warm-ups) that fit in `budget_ns` at
/// `per_op_ns`, the calls run after them counted as one trial more. When fewer than
/// [`TRIALS_FLOOR`] fit, shorter trials at the floor; when not even one iteration each
/// fits, not enough: the trials of one iteration that fit, at least one (a record holds
/// one) and fewer than the floor.
pub fn fit_trials(spec: &PlanSpec, plan: Plan, budget_ns: f64, per_op_ns: f64) -> Fitted {
    let per_trial = (plan.iterations + plan.warmups) as f64 * per_op_ns;
    let trials = fits(budget_ns, per_trial, u64::MAX).saturating_sub(1).min(u64::from(spec.trials));
    if trials >= TRIALS_FLOOR {
        return Fitted { trials, iterations: plan.iterations, enough: true };
    }
    let per_floor_trial = budget_ns / (TRIALS_FLOOR + 1) as f64;
    let iterations = fits(per_floor_trial, per_op_ns, u64::MAX).saturating_sub(plan.warmups).min(plan.iterations);
    if iterations >= 1 && u64::from(spec.trials) >= TRIALS_FLOOR {
        return Fitted { trials: TRIALS_FLOOR, iterations, enough: true };
    }
    let one = fits(budget_ns, (1 + plan.warmups) as f64 * per_op_ns, u64::MAX).saturating_sub(1);
    let trials = one.clamp(1, (TRIALS_FLOOR - 1).min(u64::from(spec.trials).max(1)));
    Fitted { trials, iterations: 1, enough: false }
}

pub use crate::evidence::schema::Budget;

/// What a page and the console say where a budget allowed too few for a result.
pub const NOT_ENOUGH: &str = "not enough measurements";

/// Whether a record's budget (if any) allowed enough trials for its figures to stand.
pub fn enough(r: &crate::evidence::schema::Record) -> bool {
    r.budget.as_ref().is_none_or(|b| b.enough)
}

impl Budget {
    /// What `budget` allowed: `allowed` units of `unit_ns` (of `iterations` each, bench),
    /// enough when they reach `floor`.
    pub fn of(budget: &TimeBudget, unit_ns: f64, (allowed, iterations): (u64, u64), floor: u64) -> Budget {
        Budget {
            seconds: budget.per_op.as_secs_f64(),
            source: budget.source.clone(),
            unit_ns: if unit_ns.is_finite() { unit_ns } else { 0.0 },
            allowed,
            iterations,
            floor,
            enough: allowed >= floor,
        }
    }

    /// The budget as run: `n` of what it allowed, stopped early past [`overrun`].
    pub fn ran(self, n: u64) -> Budget {
        let allowed = n.min(self.allowed);
        Budget { allowed, enough: allowed >= self.floor, ..self }
    }

    /// Why a kept record's budget contradicts itself or the floor of today; None when
    /// it holds together.
    pub fn contradiction(&self, floor: u64) -> Option<String> {
        if self.floor != floor {
            return Some(format!("its budget's floor is {}, not {floor}", self.floor));
        }
        if self.enough != (self.allowed >= self.floor) {
            return Some(format!(
                "its budget says {} with {} allowed of a floor of {}",
                if self.enough { "enough" } else { "not enough" },
                self.allowed,
                self.floor
            ));
        }
        (!self.seconds.is_finite() || self.seconds <= 0.0).then(|| format!("a budget of {} s", self.seconds))
    }
}

pub use crate::evidence::domain::Trial;

impl Trial {
    pub fn ns_per_op(&self) -> f64 {
        self.ns as f64 / self.iterations as f64
    }
    /// Counter ticks per nanosecond: the effective clock when the counter counts cycles.
    pub fn clock_ghz(&self) -> f64 {
        self.ticks as f64 / self.ns.max(1) as f64
    }
}

/// Calls in a per-call run: about one trial's target of them, at least `CALLS_MIN` (for
/// the quartiles of a slow operation), at most `CALLS_MAX` (drivers/bench_core.h), odd so
/// that the median is one of them.
pub const CALLS_MIN: u64 = 31;
pub const CALLS_MAX: u64 = 1001;

pub fn calls_for(spec: &PlanSpec, ns_per_op: f64) -> u64 {
    let n = (spec.trial_target_s * 1e9 / ns_per_op.max(1.0)).floor() as u64;
    let n = n.clamp(CALLS_MIN, CALLS_MAX);
    n - u64::from(n.is_multiple_of(2))
}

/// The nearest-rank quantile `p` (0 < p <= 1) of sorted values: the smallest value with
/// at least a share p of the values at or below it.
fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Per-call figures from a calls run's samples: each call less the median of the empty
/// calls' (the counter's own overhead), then quartiles and the 99th percentile by
/// nearest rank. None of no calls.
pub fn per_call(ticks: &[u64], overhead: &[u64]) -> Option<crate::evidence::schema::PerCallFigures> {
    if ticks.is_empty() {
        return None;
    }
    let mut o = overhead.to_vec();
    o.sort_unstable();
    let overhead_ticks = if o.is_empty() { 0 } else { nearest_rank(&o, 0.5) };
    let mut v: Vec<u64> = ticks.iter().map(|t| t.saturating_sub(overhead_ticks)).collect();
    v.sort_unstable();
    Some(crate::evidence::schema::PerCallFigures {
        calls: v.len() as u64,
        overhead_ticks,
        q1: nearest_rank(&v, 0.25),
        median: nearest_rank(&v, 0.5),
        q3: nearest_rank(&v, 0.75),
        p99: nearest_rank(&v, 0.99),
        min: v[0],
        max: v[v.len() - 1],
    })
}

/// The median (NaN of nothing), the one rule every median of the tool follows.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    }
}

/// Which trials are disturbed: a clock visibly below the others (below 95 % of the
/// median, meaningful only when the counter counts cycles), or a time per operation
/// far out (more than 5 % and more than 3 scaled MADs above the median).
pub fn disturbed(trials: &[Trial], counter_is_cycles: bool) -> Vec<bool> {
    let per_op: Vec<f64> = trials.iter().map(Trial::ns_per_op).collect();
    let m = median(per_op.clone());
    let mad = 1.4826 * median(per_op.iter().map(|x| (x - m).abs()).collect());
    let clock = median(trials.iter().map(Trial::clock_ghz).collect());
    trials
        .iter()
        .zip(&per_op)
        .map(|(t, &x)| {
            let slow_clock = counter_is_cycles && t.clock_ghz() < 0.95 * clock;
            let far_out = x > m * 1.05 && x - m > 3.0 * mad;
            slow_clock || far_out
        })
        .collect()
}

pub use crate::evidence::domain::Aggregate;

pub fn aggregate(trials: &[Trial]) -> Aggregate {
    let kept: Vec<&Trial> = trials.iter().filter(|t| !t.replaced).collect();
    // Saturating: the figures come from a process the candidate's code shares.
    let sum = |f: fn(&Trial) -> u64| kept.iter().fold(0u64, |a, t| a.saturating_add(f(t)));
    let (n, ns, ticks) = (sum(|t| t.iterations), sum(|t| t.ns), sum(|t| t.ticks));
    let per_op: Vec<f64> = kept.iter().map(|t| t.ns_per_op()).collect();
    let med = median(per_op.clone());
    let min = per_op.iter().copied().fold(f64::INFINITY, f64::min);
    let max = per_op.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mad = median(per_op.iter().map(|x| (x - med).abs()).collect());
    let mean_ns = ns as f64 / n.max(1) as f64;
    Aggregate {
        n,
        trials: kept.len(),
        iterations: kept.first().map_or(0, |t| t.iterations),
        mean_ns,
        mean_ticks: ticks as f64 / n.max(1) as f64,
        ops_per_s: if mean_ns > 0.0 { 1e9 / mean_ns } else { 0.0 },
        median_trial_ns: med,
        min_trial_ns: min,
        max_trial_ns: max,
        spread: (max - min) / med,
        rel_mad: mad / med,
        counter_hz: ticks as f64 / ns.max(1) as f64 * 1e9,
    }
}

/// The spread of one figure over the kept trials, as the field reports it: mean ±
/// sample standard deviation (liboqs `speed_kem`), median with quartiles (eBACS), and
/// the extremes. The values are the trials' per-operation figures, so the deviation is
/// between trial processes, not between single calls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for a single value.
    pub sd: f64,
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
}

/// [`Spread`] of `values` (NaN throughout when empty). Quartiles interpolate linearly
/// between order statistics (R's type 7), so the median is the one [`aggregate`] gives.
pub fn spread(values: &[f64]) -> Spread {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let q = |p: f64| {
        if n == 0 {
            return f64::NAN;
        }
        let h = (n - 1) as f64 * p;
        let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
        v[lo] + (h - lo as f64) * (v[hi] - v[lo])
    };
    let mean = v.iter().sum::<f64>() / n as f64;
    let ss: f64 = v.iter().map(|x| (x - mean).powi(2)).sum();
    let sd = if n > 1 { (ss / (n - 1) as f64).sqrt() } else { 0.0 };
    Spread { n, mean, sd, min: q(0.0), q1: q(0.25), median: q(0.5), q3: q(0.75), max: q(1.0) }
}

/// Time per operation of each kept (not replaced) trial, in ns.
pub fn kept_ns_per_op<'a>(trials: impl IntoIterator<Item = &'a Trial>) -> Vec<f64> {
    trials.into_iter().filter(|t| !t.replaced).map(Trial::ns_per_op).collect()
}

/// Counter ticks per operation of each kept trial.
pub fn kept_ticks_per_op<'a>(trials: impl IntoIterator<Item = &'a Trial>) -> Vec<f64> {
    trials.into_iter().filter(|t| !t.replaced).map(|t| t.ticks as f64 / t.iterations.max(1) as f64).collect()
}

/// `18.1 ms`, `48.8 µs`: three significant digits, as on the seed pages.
pub fn human_time(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    format!("{} {unit}", three_digits(v))
}

/// Cycles or counter ticks as the seed pages print them: two decimals with a metric
/// suffix from 1000 up (`107.10 k`, `3.03 M`, `1.07 G`), whole below. The one rule for
/// the console and the pages (`pages::forms::cycles`).
pub fn human_count(x: f64) -> String {
    for (scale, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if x >= scale {
            return format!("{:.2} {suffix}", x / scale);
        }
    }
    format!("{x:.0}")
}

/// A share as the seed pages print it: whole percent from 10 % up (`78%`), one decimal
/// below (`5.3%`, `0.0%`).
pub fn percent(share: f64) -> String {
    let p = 100.0 * share;
    if p >= 9.95 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// Three significant digits as the seed pages print them: C's `%.3g` (`45`, `22.2`,
/// `1.96`, `864`, and `1.83e+03` from 1000 up), trailing zeros dropped.
pub fn three_digits(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    // The exponent after rounding to three digits (999.7 is 1.00e+03).
    let sci = format!("{v:.2e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    let trim = |s: String| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s };
    if !(-4..3).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mantissa.to_owned()), exp.abs());
    }
    let decimals = (2 - exp) as usize;
    trim(format!("{v:.decimals$}"))
}

// ---- How far one record's figures go at its run's size (pages and compare)

/// The reference plan's trials: with fewer, compare's rank test cannot separate two
/// records (3 a side give p = 0.1 at best), and one slow trial moves the mean.
pub const TRUSTED_TRIALS: usize = 5;
/// Slowest minus fastest kept trial over the median: on a fixed host the reference
/// plan's trials lie within a few percent; beyond 10 % a figure's second digit is open.
pub const TRUSTED_SPREAD: f64 = 0.10;

/// Why `r`'s figures are indicative only at its run's size, each in a few words (the one
/// rule of the pages and `compare`); empty when none holds.
pub fn indicative(r: &crate::evidence::schema::Record) -> Vec<String> {
    let a = &r.aggregate;
    let mut why = Vec::new();
    if !enough(r) {
        why.push(NOT_ENOUGH.to_owned());
    }
    if r.quick {
        why.push("quick run".to_owned());
    }
    if !r.host_gate.failed().is_empty() {
        why.push("unfixed host".to_owned());
    }
    if a.trials < TRUSTED_TRIALS {
        why.push(format!("{} trials", a.trials));
    }
    if a.spread > TRUSTED_SPREAD {
        why.push(format!("trials {:.0} % apart", a.spread * 100.0));
    }
    why
}

/// [`indicative`]'s rule in words, for the line under a table that marks it.
pub fn indicative_rule() -> String {
    format!(
        "Indicative: a figure of a quick run (`bench --quick`), of an unfixed host (bench's host gate failed), \
         of fewer than {TRUSTED_TRIALS} kept trials, or whose slowest and fastest trials lie more than {:.0} % of \
         the median apart. Such figures move between runs of the same code by far more than their spread (two \
         quick runs on one VM: 84.9 µs and 220 µs for one keygen); the reference plan on a fixed host marks none.",
        TRUSTED_SPREAD * 100.0
    )
}

// ---- Two samples: is a difference within noise (compare)

/// Largest pooled sample tested exactly (every split: C(20, 10) = 184 756 at most).
const EXACT_UP_TO: usize = 20;

/// Two-sided p-value of the Mann–Whitney rank-sum test of `a` against `b`: how often a
/// split of the pooled values into groups of their sizes puts the rank sum at least as
/// far from its mean as observed. Ties get mid-ranks. Exact up to [`EXACT_UP_TO`]
/// values; above, the normal approximation with tie and continuity corrections.
/// 1 when either side is empty.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return 1.0;
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let ranks = mid_ranks(&pooled);
    let expected = n as f64 * (n + m + 1) as f64 / 2.0;
    let observed = (ranks[..n].iter().sum::<f64>() - expected).abs();
    if n + m <= EXACT_UP_TO {
        exact_p(&ranks, n, expected, observed)
    } else {
        normal_p(&ranks, (n, m), observed)
    }
}

/// The smallest p-value the test can give for groups of `n` and `m` values (no ties):
/// the two complete separations out of every split. At 5 trials a side it is 2/252,
/// at 3 it is 2/20 = 0.1: three trials a side can never show a difference at 0.05.
pub fn smallest_p(n: usize, m: usize) -> f64 {
    (2.0 / binomial(n + m, n)).min(1.0)
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

/// Ranks from 1, equal values sharing the mean of their positions.
fn mid_ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
    let mut ranks = vec![0.0; v.len()];
    let mut start = 0;
    while start < order.len() {
        let end = (start..order.len()).find(|&k| v[order[k]] != v[order[start]]).unwrap_or(order.len());
        let rank = (start + end + 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Every way to choose `n` of the pooled ranks (subsets as bit masks, in Gosper's order).
fn exact_p(ranks: &[f64], n: usize, expected: f64, observed: f64) -> f64 {
    let total = ranks.len();
    let (mut mask, end) = ((1u32 << n) - 1, 1u32 << total);
    let (mut extreme, mut splits) = (0u64, 0u64);
    while mask < end {
        let sum: f64 = (0..total).filter(|&i| mask & (1 << i) != 0).map(|i| ranks[i]).sum();
        extreme += u64::from((sum - expected).abs() >= observed - 1e-9);
        splits += 1;
        let low = mask & mask.wrapping_neg();
        let high = mask + low;
        mask = high | (((mask ^ high) >> 2) / low);
    }
    extreme as f64 / splits as f64
}

fn normal_p(ranks: &[f64], (n, m): (usize, usize), observed: f64) -> f64 {
    let total = (n + m) as f64;
    let mut sorted = ranks.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    for group in sorted.chunk_by(|x, y| x == y) {
        let t = group.len() as f64;
        ties += t * t * t - t;
    }
    let variance = n as f64 * m as f64 / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = (observed - 0.5).max(0.0) / variance.sqrt();
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7), for x ≥ 0.
fn erfc(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    poly * (-x * x).exp()
}

// ---- dudect's test (Reparaz, Balasch, Verbauwhede 2017), for `ct`

/// Percentile crops of dudect: each keeps the measurements below one percentile of the
/// pooled set, 1 - 0.5^(10 (k + 1) / CROPS), so that noise in the upper tail cannot
/// hide a difference.
const CROPS: usize = 100;
/// The first share of the measurements is dropped (caches, predictors, frequency).
const WARMUP_SHARE: f64 = 0.02;
/// A test counts only with this many measurements in each class.
pub const MIN_PER_CLASS: u64 = 500;
/// dudect's threshold on |t|: above it, the classes' timings differ.
pub const THRESHOLD: f64 = 4.5;

/// dudect's own bounds (dudect.h): below `enough_measurements`, 10,000 in the test
/// giving the largest |t|, it gives no verdict, and only above 10 it says "probably not
/// constant time". One test of a few thousand measurements picked as the largest of
/// about a hundred moves past 4.5 by noise alone (clean ML-KEM dec: 8.6 at 2,000).
pub const ENOUGH_MEASUREMENTS: u64 = 10_000;
pub const SMALL_SAMPLE_THRESHOLD: f64 = 10.0;

pub use crate::evidence::domain::Welch;
use crate::evidence::schema::CtTimingStatus;

impl Welch {
    /// Every dudect-style test's threshold: |t| above [`THRESHOLD`].
    pub fn differs(&self) -> bool {
        self.t.abs() > THRESHOLD
    }

    /// The margin rule, `ct`'s one verdict: |t| above [`THRESHOLD`] differs on at least
    /// [`ENOUGH_MEASUREMENTS`], else only above [`SMALL_SAMPLE_THRESHOLD`]; between the
    /// two on fewer measurements it is inconclusive.
    pub fn status(&self) -> CtTimingStatus {
        let (t, n) = (self.t.abs(), self.n[0] + self.n[1]);
        if t > SMALL_SAMPLE_THRESHOLD || (self.differs() && n >= ENOUGH_MEASUREMENTS) {
            CtTimingStatus::Differs
        } else if self.differs() {
            CtTimingStatus::Inconclusive
        } else {
            CtTimingStatus::NoneFound
        }
    }

    /// How strongly [`Welch::status`] speaks for a difference: 2 differs, 1 inconclusive.
    pub fn rank(&self) -> u8 {
        match self.status() {
            CtTimingStatus::Differs => 2,
            CtTimingStatus::Inconclusive => 1,
            _ => 0,
        }
    }
}

/// The margin rule in words, for pages and the console.
pub fn margin_rule() -> String {
    format!(
        "above {THRESHOLD} the classes' timings differ when the test had at least {},{:03} measurements; on \
         fewer, only above {SMALL_SAMPLE_THRESHOLD}, and between the two the test is inconclusive (dudect's own \
         bounds)",
        ENOUGH_MEASUREMENTS / 1000,
        ENOUGH_MEASUREMENTS % 1000
    )
}

/// Running count, mean and sum of squared deviations (Welford).
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Moments {
    fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    fn var(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            self.m2 / (self.n - 1) as f64
        }
    }
}

/// Welch's t of class 0 against class 1; None without enough in each class.
fn welch(m: [Moments; 2]) -> Option<f64> {
    if m.iter().any(|c| c.n < MIN_PER_CLASS) {
        return None;
    }
    let se = (m[0].var() / m[0].n as f64 + m[1].var() / m[1].n as f64).sqrt();
    // No spread at all but a difference: the largest t there is (JSON has no infinity).
    Some(if se > 0.0 {
        (m[0].mean - m[1].mean) / se
    } else if m[0].mean == m[1].mean {
        0.0
    } else {
        f64::MAX.copysign(m[0].mean - m[1].mean)
    })
}

/// dudect's tests on (class, nanoseconds) in the order measured: the first order on all
/// kept measurements and on each percentile crop, and the second order (squared
/// distances from the class means) on all. None when no test has enough measurements.
pub fn dudect(samples: &[(usize, f64)]) -> Option<Welch> {
    let kept = &samples[(samples.len() as f64 * WARMUP_SHARE) as usize..];
    let mut all = [Moments::default(); 2];
    for &(c, x) in kept {
        all[c.min(1)].push(x);
    }
    let mut best: Option<Welch> = None;
    let mut consider = |test: String, m: [Moments; 2]| {
        if let Some(t) = welch(m) {
            if best.as_ref().is_none_or(|b| t.abs() > b.t.abs()) {
                best = Some(Welch { t, test, n: [m[0].n, m[1].n], mean_ns: [all[0].mean, all[1].mean] });
            }
        }
    };
    consider("first order, all".into(), all);
    let mut sorted: Vec<f64> = kept.iter().map(|s| s.1).collect();
    sorted.sort_by(f64::total_cmp);
    for k in 0..CROPS {
        let q = 1.0 - 0.5f64.powf(10.0 * (k + 1) as f64 / CROPS as f64);
        let Some(&limit) = sorted.get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1))) else {
            break;
        };
        let mut m = [Moments::default(); 2];
        for &(c, x) in kept.iter().filter(|s| s.1 < limit) {
            m[c.min(1)].push(x);
        }
        consider(format!("first order, below percentile {:.1}", q * 100.0), m);
    }
    let mut second = [Moments::default(); 2];
    for &(c, x) in kept {
        let c = c.min(1);
        second[c].push((x - all[c].mean).powi(2));
    }
    consider("second order, all".into(), second);
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(iterations: u64, ns: u64, ticks: u64) -> Trial {
        Trial { iterations, ns, ticks, disturbed: false, replaced: false }
    }

    #[test]
    fn per_call_quantiles_are_nearest_rank_less_the_median_overhead() {
        // 1..=100 ticks, overhead 10, 20, 30: each call less 20 (below it: 0).
        let ticks: Vec<u64> = (1..=100).rev().collect();
        let f = per_call(&ticks, &[30, 10, 20]).unwrap();
        assert_eq!(f.overhead_ticks, 20);
        assert_eq!((f.min, f.q1, f.median, f.q3, f.p99, f.max), (0, 5, 30, 55, 79, 80));
        assert_eq!(f.calls, 100);
        // One call: every quantile is it; no overhead read: nothing subtracted.
        let one = per_call(&[7], &[]).unwrap();
        assert_eq!((one.q1, one.median, one.p99, one.overhead_ticks), (7, 7, 7, 0));
        assert!(per_call(&[], &[1]).is_none());
    }

    #[test]
    fn calls_follow_the_trial_target_within_bounds_and_are_odd() {
        let spec = PlanSpec::reference(1.0);
        assert_eq!(calls_for(&spec, 20_000.0), CALLS_MAX);
        assert_eq!(calls_for(&spec, 33e6), CALLS_MIN);
        assert_eq!(calls_for(&spec, 1e9 / 500.0), 499);
        assert_eq!(calls_for(&spec, 1e9 / 64.0), 63);
    }

    #[test]
    fn human_formats_match_the_seed_pages() {
        assert_eq!(human_time(18.1e6), "18.1 ms");
        assert_eq!(human_time(237e6), "237 ms");
        assert_eq!(human_time(48_760.0), "48.8 µs");
        assert_eq!(human_count(48.72e6), "48.72 M");
        assert_eq!(three_digits(5.763), "5.76");
        // Seed page kem-07 on x86_1: `45 ms`, `510 ms`, `22.2`, `8.16`, `1.96`.
        assert_eq!(human_time(45e6), "45 ms");
        assert_eq!(human_time(510e6), "510 ms");
        assert_eq!(three_digits(22.2), "22.2");
        assert_eq!(three_digits(1.96), "1.96");
        assert_eq!(three_digits(99.97), "100");
        assert_eq!(human_count(1.07e9), "1.07 G");
        assert_eq!((human_count(107_100.0), human_count(796.4)), ("107.10 k".into(), "796".into()));
        // Seed page kem-04 on x86_1 (ops/s): `1.83e+03`, `864`, `34.4`, `13`, `3.9`;
        // kex-02: `1.99e+07`.
        assert_eq!(three_digits(1831.5), "1.83e+03");
        assert_eq!(three_digits(864.2), "864");
        assert_eq!(three_digits(34.41), "34.4");
        assert_eq!(three_digits(13.02), "13");
        assert_eq!(three_digits(3.9), "3.9");
        assert_eq!(three_digits(1.99e7), "1.99e+07");
        assert_eq!(three_digits(999.7), "1e+03");
        assert_eq!(three_digits(1800.0), "1.8e+03");
        assert_eq!(three_digits(0.0123), "0.0123");
        assert_eq!(human_time(19.97e6), "20 ms");
        // Shares (seed kem-03 on arm_1): `78%`, `42%`, `5.3%`, `0.0%`.
        assert_eq!(percent(0.7812), "78%");
        assert_eq!(percent(0.053), "5.3%");
        assert_eq!(percent(0.0001), "0.0%");
        assert_eq!(percent(0.0996), "10%");
    }

    #[test]
    fn plan_follows_the_reference_rules() {
        let spec = PlanSpec::reference(1.0);
        // 50 µs per op: 20000 fit a second, capped at the maximum.
        assert_eq!(plan(&spec, 50e3), Plan { iterations: 20_000, warmups: 3 });
        // 18 ms per op: 55 per second.
        assert_eq!(plan(&spec, 18e6), Plan { iterations: 55, warmups: 3 });
        // 237 ms: 4 per second, but 100 operations over 5 trials need 20.
        assert_eq!(plan(&spec, 237e6), Plan { iterations: 20, warmups: 1 });
        // Over 5 s: no warm-up.
        assert_eq!(plan(&spec, 6e9), Plan { iterations: 20, warmups: 0 });
        // The arm_1 target of 0.5 s halves the short-operation count.
        assert_eq!(plan(&PlanSpec::reference(0.5), 18e6).iterations, 27);
    }

    /// The figures: BRQC-128's dec at 33 ms, BRQC-512's at 1.07 G cycles
    /// (0.357 s at 3 GHz), on the reference plan of a 1 s trial target.
    #[test]
    fn a_budget_fits_the_plans_trials_then_shorter_ones_then_not_enough() {
        let spec = PlanSpec::reference(1.0);
        let brqc128 = plan(&spec, 33e6);
        assert_eq!(brqc128, Plan { iterations: 30, warmups: 3 });
        // 33 calls a trial, 1.089 s: 10 s fit 9, the calls run one of them, 5 the plan's.
        assert_eq!(fit_trials(&spec, brqc128, 10e9, 33e6), Fitted { trials: 5, iterations: 30, enough: true });
        // 4 s fit 3 trials with the calls run: the floor, at the plan's length.
        assert_eq!(fit_trials(&spec, brqc128, 4.4e9, 33e6), Fitted { trials: 3, iterations: 30, enough: true });
        let brqc512 = plan(&spec, 0.357e9);
        assert_eq!(brqc512, Plan { iterations: 20, warmups: 1 });
        assert_eq!(fit_trials(&spec, brqc512, 600e9, 0.357e9).trials, 5);
        // 20 s fit one trial of 21 calls: the floor's 3 trials (and the calls run) of 13.
        assert_eq!(fit_trials(&spec, brqc512, 20e9, 0.357e9), Fitted { trials: 3, iterations: 13, enough: true });
        // 1 s: not one call a trial at the floor; one trial of one iteration, not enough.
        assert_eq!(fit_trials(&spec, brqc512, 1e9, 0.357e9), Fitted { trials: 1, iterations: 1, enough: false });
        // 2.5 s: three trials of one call and its warm-up fit, but not the calls run too.
        assert_eq!(fit_trials(&spec, brqc512, 2.5e9, 0.357e9), Fitted { trials: 2, iterations: 1, enough: false });
        // Fewer trials asked than the floor: never enough under a budget.
        let two = PlanSpec { trials: 2, ..spec.clone() };
        assert!(!fit_trials(&two, brqc128, 1e12, 33e6).enough);
        // A cost of no time (or not a number) fits nothing.
        assert_eq!((fits(1e9, 0.0, 9), fits(1e9, f64::NAN, 9), fits(1e9, 1.0, 9), fits(-1.0, 1.0, 9)), (0, 0, 9, 0));
    }

    #[test]
    fn a_campaign_budget_is_shared_equally_and_a_budget_record_holds_together() {
        let share = TimeBudget::share(std::time::Duration::from_secs(6 * 3600), 12).unwrap();
        assert_eq!(share.per_op, std::time::Duration::from_secs(1800));
        assert_eq!(share.source, "campaign --budget 6h: an equal share of 12 timed operations");
        assert!(TimeBudget::share(std::time::Duration::from_secs(60), 0).is_none());
        let b = Budget::of(&share, 1e6, (2000, 0), 2000);
        assert!(b.enough && b.contradiction(2000).is_none());
        assert!(Budget { enough: false, ..b.clone() }.contradiction(2000).unwrap().contains("not enough"));
        assert!(Budget { allowed: 1999, ..b.clone() }.contradiction(2000).unwrap().contains("says enough"));
        assert!(b.contradiction(3).unwrap().contains("floor"));
        assert!(Budget { seconds: 0.0, ..b.clone() }.contradiction(2000).is_some());
        // Stopped early: what ran is what it allowed, and below the floor not enough.
        let five = Budget::of(&share, 1e9, (5, 100), TRIALS_FLOOR);
        assert_eq!((five.clone().ran(3).allowed, five.clone().ran(3).enough), (3, true));
        assert_eq!((five.clone().ran(1).allowed, five.clone().ran(1).enough), (1, false));
        assert_eq!(five.clone().ran(9), five);
        let s = std::time::Duration::from_secs;
        assert!(!overrun(s(60), s(130)) && overrun(s(60), s(131)));
    }

    #[test]
    fn aggregate_is_total_time_over_total_operations() {
        let trials = vec![t(10, 1000, 3000), t(10, 1200, 3600), t(10, 1100, 3300)];
        let a = aggregate(&trials);
        assert_eq!(a.n, 30);
        assert!((a.mean_ns - 110.0).abs() < 1e-9);
        assert!((a.median_trial_ns - 110.0).abs() < 1e-9);
        assert!((a.min_trial_ns - 100.0).abs() < 1e-9 && (a.max_trial_ns - 120.0).abs() < 1e-9);
        assert!((a.ops_per_s - 1e9 / 110.0).abs() < 1e-3);
        assert!((a.mean_ticks - 330.0).abs() < 1e-9);
        assert!((a.counter_hz - 3e9).abs() < 1.0);
        assert!((a.spread - 20.0 / 110.0).abs() < 1e-9);
    }

    #[test]
    fn spread_gives_mean_sd_and_quartiles_with_the_aggregate_median() {
        let s = spread(&[3.0, 1.0, 2.0, 4.0, 5.0]);
        assert_eq!((s.n, s.min, s.q1, s.median, s.q3, s.max), (5, 1.0, 2.0, 3.0, 4.0, 5.0));
        assert!((s.mean - 3.0).abs() < 1e-12 && (s.sd - 2.5f64.sqrt()).abs() < 1e-12);
        // Even count: quartiles between order statistics, median the midpoint.
        let s = spread(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!((s.q1, s.median, s.q3), (1.75, 2.5, 3.25));
        assert_eq!(spread(&[7.0]).sd, 0.0);
        assert!(spread(&[]).median.is_nan());
        let trials = [t(10, 1000, 3000), t(10, 1300, 3900), t(10, 1100, 3300), t(20, 2000, 6000)];
        let mut replaced = t(10, 9000, 27000);
        replaced.replaced = true;
        let all: Vec<Trial> = trials.iter().cloned().chain([replaced]).collect();
        assert_eq!(spread(&kept_ns_per_op(&all)).median, aggregate(&all).median_trial_ns);
        assert_eq!(kept_ticks_per_op(&all), vec![300.0, 390.0, 330.0, 300.0]);
    }

    #[test]
    fn huge_figures_saturate_instead_of_overflowing() {
        let t = Trial { iterations: u64::MAX, ns: u64::MAX, ticks: u64::MAX, disturbed: false, replaced: false };
        let a = aggregate(&[t.clone(), t]);
        assert_eq!(a.n, u64::MAX);
    }

    #[test]
    fn replaced_trials_do_not_count() {
        let mut slow = t(10, 5000, 15000);
        slow.replaced = true;
        let a = aggregate(&[t(10, 1000, 3000), slow, t(10, 1000, 3000)]);
        assert_eq!(a.n, 20);
        assert_eq!(a.trials, 2);
    }

    #[test]
    fn disturbed_trials_are_the_far_out_or_slow_clocked() {
        let base = vec![t(10, 1000, 3000), t(10, 1010, 3030), t(10, 990, 2970), t(10, 1005, 3015)];
        assert_eq!(disturbed(&base, true), vec![false; 4]);
        let mut slow = base.clone();
        slow.push(t(10, 1500, 4500));
        assert_eq!(disturbed(&slow, false), vec![false, false, false, false, true]);
        // Same time, lower clock: only a cycle counter can tell.
        let mut clocked = base.clone();
        clocked.push(t(10, 1000, 2500));
        assert!(disturbed(&clocked, true)[4]);
        assert!(!disturbed(&clocked, false)[4]);
    }

    /// A deterministic noise source for the dudect tests (splitmix64, uniform in [0, 1)).
    fn noise(state: &mut u64) -> f64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as f64 / u64::MAX as f64
    }

    /// Interleaved classes with a heavy-tailed noise; class 1 slower by `shift` ns.
    fn classes(n: usize, shift: f64) -> Vec<(usize, f64)> {
        let mut state = 7;
        (0..n)
            .map(|_| {
                let c = usize::from(noise(&mut state) < 0.5);
                let u = noise(&mut state);
                // Mostly 10 µs ± 1 µs, with a tail of interruptions up to a millisecond.
                let tail = if u > 0.97 { 1e6 * noise(&mut state) } else { 0.0 };
                (c, 10_000.0 + 2_000.0 * noise(&mut state) + tail + shift * c as f64)
            })
            .collect()
    }

    #[test]
    fn dudect_finds_a_shift_the_tail_would_hide_and_nothing_where_there_is_none() {
        let same = dudect(&classes(40_000, 0.0)).unwrap();
        assert!(!same.differs(), "{same:?}");
        assert!(same.n[0] >= MIN_PER_CLASS && same.n[1] >= MIN_PER_CLASS);
        // 50 ns in 10 µs, under a tail whose spread is a thousand times more: only the
        // crops see it.
        let shifted = dudect(&classes(40_000, 50.0)).unwrap();
        assert!(shifted.differs() && shifted.t < 0.0, "class 1 is the slower: {shifted:?}");
        assert!(shifted.test.contains("percentile"), "{shifted:?}");
        // A spread that differs without a shift is the second order's.
        let mut state = 3;
        let spread: Vec<(usize, f64)> = (0..40_000)
            .map(|i| (i % 2, 10_000.0 + (1.0 + 4.0 * (i % 2) as f64) * 1_000.0 * (noise(&mut state) - 0.5)))
            .collect();
        let second = dudect(&spread).unwrap();
        assert!(second.differs(), "{second:?}");
        // Too few of one class for any test.
        assert!(dudect(&[(0, 1.0); 3000]).is_none());
        // No spread but a difference: the largest finite t, signed (a record holds it).
        let constant: Vec<(usize, f64)> = (0..2_000).map(|i| (i % 2, 1.0 + (i % 2) as f64)).collect();
        assert_eq!(dudect(&constant).unwrap().t, -f64::MAX);
    }

    /// The margin rule: a quick run's |t| = 8.6 on 2,000 measurements is no verdict,
    /// the same t on 10,000 differs, and above 10 any sample differs.
    #[test]
    fn a_margin_the_sample_cannot_support_is_inconclusive() {
        let w = |t: f64, n: u64| Welch { t, test: String::new(), n: [n / 2, n - n / 2], mean_ns: [0.0; 2] };
        assert_eq!(w(8.6, 2_000).status(), CtTimingStatus::Inconclusive);
        assert_eq!(w(-8.6, 9_999).status(), CtTimingStatus::Inconclusive);
        assert_eq!(w(8.6, ENOUGH_MEASUREMENTS).status(), CtTimingStatus::Differs);
        assert_eq!(w(10.1, 2_000).status(), CtTimingStatus::Differs);
        assert_eq!(w(4.5, 1_000_000).status(), CtTimingStatus::NoneFound);
        assert!(w(10.1, 2_000).rank() > w(8.6, 2_000).rank() && w(8.6, 2_000).rank() > w(1.0, 2_000).rank());
        assert!(margin_rule().contains("at least 10,000 measurements"), "{}", margin_rule());
    }

    /// The noise rule on the golden record (a quick run of 3 trials on an unfixed host),
    /// then on the same record made a reference run on a fixed host, then spread out.
    #[test]
    fn figures_are_indicative_by_the_run_that_made_them() {
        let path = crate::project::root().join("xtask/tests/golden/record.json");
        let mut r: crate::evidence::schema::Record = crate::evidence::schema::read(&path).unwrap().unwrap();
        assert_eq!(indicative(&r), ["quick run", "unfixed host", "3 trials"]);
        r.quick = false;
        r.host_gate.checks.iter_mut().for_each(|c| c.ok = true);
        r.aggregate.trials = TRUSTED_TRIALS;
        assert!(indicative(&r).is_empty(), "{:?}", indicative(&r));
        r.aggregate.spread = 0.61;
        assert_eq!(indicative(&r), ["trials 61 % apart"]);
    }
}
