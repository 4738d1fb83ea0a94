//! The wall time a campaign's plan is expected to take, for a number of verify jobs and
//! of timing cores: before it runs (`--dry-run`) and, for the steps left, while it runs.
//! Pure arithmetic over a plan's tasks (one per instance and step) and a table of costs;
//! the campaign turns its steps into tasks.
//!
//! Costs are seconds per unit of a step kind (an instance verified, a record timed), the
//! one learner of them (`Costs`): what this run's finished steps took, else what the
//! last step of that kind took on this machine (the cache), else the prior below (only
//! where a guess is wanted: the dry run). An instance its
//! manifest marks `slow` is estimated from its own KAT time limit, which the manifests
//! set from the published figures (the reference harness's times).
//!
//! The model: the toolchain image first, then two pools working at once, `jobs` slots
//! for what is not timed (verify, ct's memcheck, sanitize) and `timing_cores` slots for
//! what is (bench, profile, ct's timing test); an instance's own steps follow each other. The wall time is the
//! image plus the largest of: the untimed work over its slots, the timed work over its
//! slots, the longest instance's own chain. A lower bound of any schedule, and within
//! one chain of what a greedy scheduler reaches.

use std::collections::BTreeMap;
use std::time::Duration;

/// The kinds of campaign steps, as the campaign names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Image,
    Verify,
    Bench,
    Profile,
    /// ct's memcheck runs.
    Ct,
    /// ct's timing test.
    CtTiming,
    Sanitize,
}

impl Kind {
    pub const ALL: [Kind; 7] =
        [Kind::Image, Kind::Verify, Kind::Bench, Kind::Profile, Kind::Ct, Kind::CtTiming, Kind::Sanitize];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Image => "image",
            Kind::Verify => "verify",
            Kind::Bench => "bench",
            Kind::Profile => "profile",
            Kind::Ct => "ct",
            Kind::CtTiming => "ct-timing",
            Kind::Sanitize => "sanitize",
        }
    }

    /// The kind a campaign step's name (`Step::kind`) stands for.
    pub fn named(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Runs on a pinned timing core, one process per core.
    pub fn timed(self) -> bool {
        matches!(self, Kind::Bench | Kind::Profile | Kind::CtTiming)
    }

    /// Seconds per unit when nothing is learned here: coarse figures of a reference
    /// implementation on one core, stated so the operator can weigh them.
    fn prior(self) -> f64 {
        match self {
            // A Debian root filesystem and its packages (5 min for the emulated arm64 one).
            Kind::Image => 300.0,
            // Extract, build with the pinned compiler, run the KAT driver (limit 600 s).
            Kind::Verify => 60.0,
            // One operation: 5 trials in processes of their own, start probes, the gate.
            Kind::Bench => 30.0,
            // A wrapped build and the operations timed once more.
            Kind::Profile => 120.0,
            // One operation under valgrind, runs with fixed and random secrets.
            Kind::Ct => 60.0,
            // One operation's timing test: its measurements as timed trials.
            Kind::CtTiming => 60.0,
            // An ASan+UBSan build, its KAT run and the family checks.
            Kind::Sanitize => 90.0,
        }
    }
}

/// Calls of one operation a timed unit makes: 5 trials and 3 start probes of one call at
/// least.
const TIMED_CALLS: f64 = 8.0;
/// valgrind's slowdown of an operation, taken as 30.
const VALGRIND: f64 = 30.0;

/// A slow instance's published figure: its KAT time limit for its record count, each
/// record one call of each of its `ops` operations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slow {
    pub kat_limit_s: f64,
    pub kat_records: u32,
    pub ops: f64,
}

impl Slow {
    fn secs(self, kind: Kind, units: f64) -> f64 {
        let record_s = self.kat_limit_s / f64::from(self.kat_records.max(1));
        let call_s = record_s / self.ops.max(1.0);
        let ct = crate::ct::CtOptions::default();
        let runs = f64::from(ct.runs);
        match kind {
            Kind::Image => 0.0,
            // The KAT run itself, to its limit.
            Kind::Verify | Kind::Sanitize => self.kat_limit_s,
            Kind::Bench => units * TIMED_CALLS * call_s,
            // Every operation timed once more, in one unit.
            Kind::Profile => units * TIMED_CALLS * record_s,
            // Its runs under valgrind, each cut at ct's time limit.
            Kind::Ct => units * (runs * VALGRIND * call_s).min(runs * ct.timeout_s as f64),
            // Its measurements, cut at ct's time limit.
            Kind::CtTiming => units * (ct.measurements as f64 * call_s).min(ct.timeout_s as f64),
        }
    }
}

/// One step of one instance (or the image step, with no instance).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub kind: Kind,
    pub id: String,
    pub label: Option<String>,
    /// Units of its kind (1 for an instance verified, its operations for a bench).
    pub units: f64,
    pub slow: Option<Slow>,
    /// Cannot run yet (its archive is missing): counted apart.
    pub blocked: bool,
}

/// Seconds per unit of each kind: the one learner of costs, for the dry run's estimate,
/// each step's own and the time left of a running campaign.
#[derive(Debug, Clone, Default)]
pub struct Costs {
    /// Learned on this machine by earlier steps (the cache).
    pub learned: BTreeMap<Kind, f64>,
    /// This run's steps: seconds and units done, by kind (they replace `learned`).
    run: BTreeMap<Kind, (f64, f64)>,
    /// No prior for a kind not learned: its tasks have no estimate, which is said rather
    /// than guessed (a running campaign's).
    no_priors: bool,
    /// What is learned is kept in the cache for the next campaign.
    persist: bool,
}

/// The cache file's key of a kind's learned cost (seconds per unit).
fn key(kind: Kind) -> String {
    format!("campaign-unit-{}", kind.name())
}

impl Costs {
    /// The costs campaigns learned on this machine (the tool's cache, never evidence);
    /// what this run learns is kept there too.
    pub fn here() -> Costs {
        let learned =
            Kind::ALL.into_iter().filter_map(|k| crate::ui::last_duration(&key(k)).map(|d| (k, d.as_secs_f64())));
        Costs { learned: learned.collect(), persist: true, ..Costs::default() }
    }

    /// These costs, a kind not learned having none (no prior: a running campaign's).
    pub fn without_priors(self) -> Costs {
        Costs { no_priors: true, ..self }
    }

    /// A finished step of `kind` took `secs` for `units`: this run's cost of the kind from
    /// now on, and (from `here`) the cache's, for the next campaign.
    pub fn learn(&mut self, kind: Kind, units: f64, secs: f64) {
        if units <= 0.0 || !secs.is_finite() {
            return;
        }
        let done = self.run.entry(kind).or_default();
        (done.0, done.1) = (done.0 + secs, done.1 + units);
        if self.persist {
            crate::ui::remember_duration(&key(kind), Duration::from_secs_f64((secs / units).max(0.0)));
        }
    }

    /// Seconds per unit of `kind`: this run's, else learned here before.
    fn per_unit(&self, kind: Kind) -> Option<f64> {
        match self.run.get(&kind) {
            Some(&(secs, units)) if units > 0.0 => Some(secs / units),
            _ => self.learned.get(&kind).copied(),
        }
    }

    /// A task's seconds: a slow instance's own figure, else the learned cost, else the
    /// prior (None without priors).
    pub fn secs(&self, task: &Task) -> Option<f64> {
        match (task.slow, self.per_unit(task.kind)) {
            (Some(slow), _) if task.kind != Kind::Image => Some(slow.secs(task.kind, task.units)),
            (_, Some(per_unit)) => Some(per_unit * task.units),
            (_, None) if self.no_priors => None,
            (_, None) => Some(task.kind.prior() * task.units),
        }
    }

    /// The seconds of all of `tasks` (one step's), when each has an estimate.
    pub fn of(&self, tasks: &[Task]) -> Option<Duration> {
        let secs: Option<f64> = tasks.iter().map(|t| self.secs(t)).sum();
        secs.map(|s| Duration::from_secs_f64(s.max(0.0)))
    }
}

/// The estimate's inputs beside the plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Untimed work at a time (verify's `--jobs`).
    pub jobs: u32,
    /// Timing processes at a time, each on a core of its own.
    pub timing_cores: u32,
    /// Seconds a timed operation may take (`--budget`'s share): bench's and ct's timing
    /// test cost no more than that per operation.
    pub op_budget_s: Option<f64>,
}

impl Options {
    /// `--jobs` and the timing cores as given, with their defaults: one timing core (the
    /// campaign times one process at a time today) and every other core for jobs.
    pub fn new(jobs: Option<u32>, timing_cores: Option<u32>) -> Options {
        let timing_cores = timing_cores.unwrap_or(1).max(1);
        let cores = std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
        let jobs = jobs.unwrap_or_else(|| cores.saturating_sub(timing_cores)).max(1);
        Options { jobs, timing_cores, op_budget_s: None }
    }

    /// A task's seconds within the budget of its operations, if it has one.
    fn capped(&self, task: &Task, secs: f64) -> f64 {
        match self.op_budget_s {
            Some(b) if matches!(task.kind, Kind::Bench | Kind::CtTiming) => secs.min(b * task.units),
            _ => secs,
        }
    }
}

/// What bounds the wall time.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// The untimed work (verify, ct's memcheck, sanitize) over the jobs.
    Untimed,
    /// The timed work (bench, profile, ct's timing test) over the timing cores.
    Timed,
    /// One instance's own steps, one after the other (`id label`).
    Chain(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub wall_s: f64,
    pub image_s: f64,
    pub untimed_s: f64,
    pub timed_s: f64,
    /// The longest instance chain and its seconds.
    pub chain: (String, f64),
    pub bound: Bound,
    /// Seconds of work per kind (image included).
    pub by_kind: BTreeMap<Kind, f64>,
    /// The submissions with the most work, most first, with their seconds.
    pub heaviest: Vec<(String, f64)>,
    pub tasks: usize,
    /// Kinds of tasks with no cost yet (without priors), left out of the figures.
    pub unknown: Vec<Kind>,
}

/// The estimate of `tasks` (blocked ones left out: see `split`).
pub fn estimate(tasks: &[Task], costs: &Costs, opts: Options) -> Estimate {
    let secs: Vec<(&Task, f64)> = tasks.iter().filter_map(|t| Some((t, opts.capped(t, costs.secs(t)?)))).collect();
    let mut unknown: Vec<Kind> = tasks.iter().filter(|t| costs.secs(t).is_none()).map(|t| t.kind).collect();
    unknown.sort();
    unknown.dedup();
    let sum = |f: &dyn Fn(&Task) -> bool| secs.iter().filter(|(t, _)| f(t)).map(|(_, s)| s).sum::<f64>();
    let image_s = sum(&|t| t.kind == Kind::Image);
    let untimed_s = sum(&|t| t.kind != Kind::Image && !t.kind.timed());
    let timed_s = sum(&|t| t.kind.timed());
    let mut chains: BTreeMap<String, f64> = BTreeMap::new();
    let mut per_sub: BTreeMap<String, f64> = BTreeMap::new();
    let mut by_kind: BTreeMap<Kind, f64> = BTreeMap::new();
    for (t, s) in &secs {
        *by_kind.entry(t.kind).or_default() += s;
        if let Some(label) = &t.label {
            *chains.entry(format!("{} {label}", t.id)).or_default() += s;
            *per_sub.entry(t.id.clone()).or_default() += s;
        }
    }
    // Of two equal chains, the first by name.
    let chain = chains.into_iter().max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(&a.0))).unwrap_or_default();
    let pools = [
        (untimed_s / f64::from(opts.jobs.max(1)), Bound::Untimed),
        (timed_s / f64::from(opts.timing_cores.max(1)), Bound::Timed),
        (chain.1, Bound::Chain(chain.0.clone())),
    ];
    let (longest, bound) = pools.into_iter().max_by(|a, b| a.0.total_cmp(&b.0)).unwrap_or((0.0, Bound::Untimed));
    let mut heaviest: Vec<(String, f64)> = per_sub.into_iter().collect();
    heaviest.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    heaviest.truncate(3);
    Estimate {
        wall_s: image_s + longest,
        image_s,
        untimed_s,
        timed_s,
        chain,
        bound,
        by_kind,
        heaviest,
        tasks: tasks.len(),
        unknown,
    }
}

/// The time left of a running campaign: the estimate's wall time of the steps not ended
/// (`about 3 min 10 s left`), and which kinds have no cost yet.
pub fn left(remaining: &[Task], costs: &Costs, opts: Options) -> String {
    if remaining.is_empty() {
        return "nothing left".into();
    }
    let e = estimate(remaining, costs, opts);
    let known = clock(e.wall_s);
    match e.unknown.is_empty() {
        true => format!("about {known} left"),
        false => {
            let kinds: Vec<&str> = e.unknown.iter().map(|k| k.name()).collect();
            format!("about {known} left, plus the first {} step(s)", kinds.join(", "))
        }
    }
}

/// The estimate of the tasks that can run now, and of all of them (the missing archives
/// supplied).
pub fn split(tasks: &[Task], costs: &Costs, opts: Options) -> (Estimate, Estimate) {
    let now: Vec<Task> = tasks.iter().filter(|t| !t.blocked).cloned().collect();
    (estimate(&now, costs, opts), estimate(tasks, costs, opts))
}

fn clock(s: f64) -> String {
    crate::ui::clock(Duration::from_secs_f64(s.max(0.0)))
}

/// Where each kind's cost comes from, in one line.
pub fn sources(costs: &Costs) -> String {
    let (learned, prior): (Vec<Kind>, Vec<Kind>) = Kind::ALL.into_iter().partition(|k| costs.learned.contains_key(k));
    let names = |ks: &[Kind]| ks.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ");
    match (learned.is_empty(), prior.is_empty()) {
        (true, _) => format!("no campaign step has finished here yet: priors for {}", names(&prior)),
        (false, true) => format!("costs learned here for {}", names(&learned)),
        (false, false) => format!("costs learned here for {}; priors for {}", names(&learned), names(&prior)),
    }
}

/// The lines `--dry-run` prints for one estimate.
pub fn lines(e: &Estimate, opts: Options) -> Vec<String> {
    let why = match &e.bound {
        Bound::Untimed => format!("the untimed work (verify, ct's memcheck, sanitize) over {} jobs", opts.jobs),
        Bound::Timed => {
            format!("the timed work (bench, profile, ct's timing test) over {} timing cores", opts.timing_cores)
        }
        Bound::Chain(which) => format!("the steps of {which}, one after the other"),
    };
    let kinds: Vec<String> = e.by_kind.iter().map(|(k, s)| format!("{} {}", k.name(), clock(*s))).collect();
    let heavy: Vec<String> = e.heaviest.iter().map(|(id, s)| format!("{id} {}", clock(*s))).collect();
    vec![
        format!("about {} of wall time for {} task(s), set by {why}", clock(e.wall_s), e.tasks),
        format!(
            "  image {}, then untimed {} / {} jobs = {}, timed {} / {} timing cores = {}, longest instance {} ({})",
            clock(e.image_s),
            clock(e.untimed_s),
            opts.jobs,
            clock(e.untimed_s / f64::from(opts.jobs.max(1))),
            clock(e.timed_s),
            opts.timing_cores,
            clock(e.timed_s / f64::from(opts.timing_cores.max(1))),
            if e.chain.0.is_empty() { "none" } else { &e.chain.0 },
            clock(e.chain.1)
        ),
        format!("  work by kind: {}; most work: {}", kinds.join(", "), heavy.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(kind: Kind, id: &str, label: &str, units: f64) -> Task {
        let label = (!label.is_empty()).then(|| label.to_owned());
        Task { kind, id: id.into(), label, units, slow: None, blocked: false }
    }

    /// Two submissions: `a` with two instances, `b` with one slow instance (a 1000 s KAT
    /// limit for 10 records). Priors: image 300, verify 60, bench 30 per record.
    fn plan() -> Vec<Task> {
        let slow = Slow { kat_limit_s: 1000.0, kat_records: 10, ops: 2.0 };
        vec![
            task(Kind::Image, "", "", 1.0),
            task(Kind::Verify, "a", "a1", 1.0),
            task(Kind::Verify, "a", "a2", 1.0),
            task(Kind::Bench, "a", "a1", 3.0),
            task(Kind::Bench, "a", "a2", 3.0),
            Task { slow: Some(slow), ..task(Kind::Verify, "b", "b1", 1.0) },
            Task { slow: Some(slow), ..task(Kind::Bench, "b", "b1", 2.0) },
        ]
    }

    #[test]
    fn the_wall_time_is_the_image_plus_the_largest_of_the_pools_and_the_longest_chain() {
        let costs = Costs::default();
        // Untimed: 60 + 60 + 1000 = 1120. Timed: 90 + 90 + 2 units * 8 calls * 50 s = 980.
        // Chains: a1 150, a2 150, b1 1000 + 800 = 1800.
        let e = estimate(&plan(), &costs, Options { jobs: 4, timing_cores: 1, op_budget_s: None });
        assert_eq!((e.image_s, e.untimed_s, e.timed_s), (300.0, 1120.0, 980.0));
        assert_eq!(e.chain, ("b b1".to_owned(), 1800.0));
        assert_eq!(e.bound, Bound::Chain("b b1".into()));
        assert_eq!(e.wall_s, 2100.0);
        assert_eq!(e.heaviest, vec![("b".to_owned(), 1800.0), ("a".to_owned(), 300.0)]);
        assert_eq!(e.by_kind[&Kind::Bench], 980.0);
    }

    #[test]
    fn learned_costs_replace_the_priors_but_not_a_slow_instances_own_figure() {
        let mut costs = Costs::default();
        costs.learned.insert(Kind::Verify, 2000.0);
        costs.learned.insert(Kind::Bench, 10.0);
        // Untimed: 2000 + 2000 + 1000 (b1's own) = 5000, over 1 job. Timed: 30 + 30 + 800.
        let e = estimate(&plan(), &costs, Options { jobs: 1, timing_cores: 1, op_budget_s: None });
        assert_eq!((e.untimed_s, e.timed_s), (5000.0, 860.0));
        assert_eq!((e.wall_s, e.bound), (5300.0, Bound::Untimed));
        // Three jobs: 1667 s each, less than a1's (and a2's) chain of 2030; of the two, a1.
        let e = estimate(&plan(), &costs, Options { jobs: 3, timing_cores: 1, op_budget_s: None });
        assert_eq!((e.wall_s, e.bound), (2330.0, Bound::Chain("a a1".into())));
    }

    #[test]
    fn a_budget_caps_the_timed_operations_and_nothing_else() {
        let costs = Costs::default();
        let free = estimate(&plan(), &costs, Options { jobs: 4, timing_cores: 1, op_budget_s: None });
        let capped = estimate(&plan(), &costs, Options { jobs: 4, timing_cores: 1, op_budget_s: Some(1.0) });
        assert!(capped.timed_s < free.timed_s, "{} {}", capped.timed_s, free.timed_s);
        let bench_ops: f64 = plan().iter().filter(|t| t.kind == Kind::Bench && t.slow.is_none()).map(|t| t.units).sum();
        assert!(capped.timed_s >= bench_ops, "one second per operation at least");
        assert_eq!(capped.untimed_s, free.untimed_s, "untimed work has no budget");
    }

    #[test]
    fn timing_cores_divide_the_timed_work() {
        let mut costs = Costs::default();
        costs.learned.insert(Kind::Bench, 1000.0);
        // Timed: 3000 + 3000 + 800 = 6800; a1's chain is 60 + 3000.
        let one = estimate(&plan(), &costs, Options { jobs: 8, timing_cores: 1, op_budget_s: None });
        assert_eq!((one.wall_s, one.bound), (300.0 + 6800.0, Bound::Timed));
        let four = estimate(&plan(), &costs, Options { jobs: 8, timing_cores: 4, op_budget_s: None });
        assert_eq!((four.wall_s, four.bound), (300.0 + 3060.0, Bound::Chain("a a1".into())));
    }

    #[test]
    fn a_slow_instances_ct_is_cut_at_cts_time_limit() {
        let slow = Slow { kat_limit_s: 1e6, kat_records: 1, ops: 1.0 };
        let ct = crate::ct::CtOptions::default();
        let limit = f64::from(ct.runs) * ct.timeout_s as f64;
        assert_eq!(slow.secs(Kind::Ct, 2.0), 2.0 * limit);
        let quick = Slow { kat_limit_s: 10.0, kat_records: 10, ops: 2.0 };
        assert_eq!(quick.secs(Kind::Ct, 2.0), 2.0 * f64::from(ct.runs) * VALGRIND * 0.5);
        assert_eq!((quick.secs(Kind::Verify, 1.0), quick.secs(Kind::Profile, 1.0)), (10.0, TIMED_CALLS));
    }

    #[test]
    fn blocked_tasks_count_only_in_the_whole_plan() {
        let mut tasks = plan();
        tasks.iter_mut().filter(|t| t.id == "b").for_each(|t| t.blocked = true);
        let (now, all) = split(&tasks, &Costs::default(), Options { jobs: 4, timing_cores: 1, op_budget_s: None });
        assert_eq!((now.tasks, all.tasks), (5, 7));
        // Now: untimed 120 / 4 = 30, timed 180, chains 150: the timed pool.
        assert_eq!((now.wall_s, now.bound), (480.0, Bound::Timed));
        assert_eq!(all.wall_s, 2100.0);
    }

    #[test]
    fn a_kind_is_found_by_the_campaigns_name_and_the_lines_say_the_bound() {
        assert_eq!(Kind::named("sanitize"), Some(Kind::Sanitize));
        assert_eq!(Kind::named("verify "), None);
        let opts = Options { jobs: 4, timing_cores: 1, op_budget_s: None };
        let lines = lines(&estimate(&plan(), &Costs::default(), opts), opts);
        assert_eq!(
            lines[0],
            "about 35 min 00 s of wall time for 7 task(s), set by the steps of b b1, one after the other"
        );
        assert!(lines[1].contains("timed 16 min 20 s / 1 timing cores = 16 min 20 s"), "{}", lines[1]);
        let mut costs = Costs::default();
        assert!(sources(&costs).starts_with("no campaign step has finished here yet"));
        costs.learned.insert(Kind::Verify, 1.0);
        assert_eq!(
            sources(&costs),
            "costs learned here for verify; priors for image, bench, profile, ct, ct-timing, sanitize"
        );
    }
}
