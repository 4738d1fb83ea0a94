//! `cargo xtask campaign`: the toolchain image, then verify and bench for each
//! submission on one system, the steps of all of them one graph run by `--jobs`
//! workers (`sched`). Resumable: with --resume, a step whose evidence exists and
//! matches the evidence index is skipped. Timing only follows a passing verify.
//! `--dry-run` prints the plan (and what is skipped, and why) from the manifests alone.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use camino::Utf8Path;
use xshell::Shell;

use crate::campaign_estimate::{Costs, Kind, Options, Slow, Task};
use crate::compile::builder::{submission_id, RunCtx};
use crate::compile::options::{Given, Inputs};
use crate::compile::submission::Submission;
use crate::container::engine::Target;
use crate::container::interrupt::Interrupted;
use crate::container::systems::SystemProfile;
use crate::evidence::schema::{CampaignReport, CampaignStep, Summary, Survey};
use crate::evidence::{self, Layout};
use crate::kat::verify::Status;
use crate::kat::verify::Verify;
use crate::measure::bench::{Bench, TimingSlot};
use crate::measure::hostgate::Gate;
use crate::ui;
use crate::{measure::profile, project};

/// `campaign`: image, verify, bench, profile and ct for a set of submissions on one system.
#[derive(Debug, Clone)]
pub struct Campaign {
    pub ids: Vec<String>,
    pub target: Target,
    pub unsandboxed_host: bool,
    pub system: String,
    pub out: camino::Utf8PathBuf,
    pub resume: bool,
    pub quick: bool,
    pub allow_unfixed_host: bool,
    pub no_bench: bool,
    pub cpu: Option<usize>,
    pub trials: Option<u32>,
    pub timeout: Option<u64>,
    pub memory: String,
    pub no_profile: bool,
    pub no_ct: bool,
    pub no_sanitize: bool,
    pub archives: Vec<Given>,
    pub source_dirs: Vec<Given>,
    pub archive_dir: Option<camino::Utf8PathBuf>,
    pub defer: bool,
    pub jobs: Option<u32>,
    pub dry_run: bool,
    /// The cores timing steps run on, one at a time on each (`--timing-cores`); None:
    /// one, `cpu`'s or the profile's.
    pub timing_cores: Option<Vec<usize>>,
    /// The timed work's budget as a whole, shared over its timed operations.
    pub budget: Option<std::time::Duration>,
}

/// Where one step runs: its timing core (a timing step's), the cores its containers may
/// use, and its span in the run's activity.
struct Place {
    core: Option<usize>,
    cpus: Option<Vec<usize>>,
    me: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Image,
    Verify(String, Part),
    /// One instance's timing (`Part::One`); a family with a same-run baseline is timed
    /// whole, its baseline once in the same run.
    Bench(String, Part),
    Profile(String),
    /// ct's memcheck runs of every instance (untimed).
    Ct(String),
    /// ct's timing test of one instance, completing its memcheck records.
    CtTiming(String, String),
    Sanitize(String),
}

/// A step of the plan, and why it is skipped (None: it runs).
struct Planned {
    step: Step,
    skipped: Option<String>,
}

impl Planned {
    fn run(step: Step) -> Planned {
        Planned { step, skipped: None }
    }

    fn skip(step: Step, why: impl Into<String>) -> Planned {
        Planned { step, skipped: Some(why.into()) }
    }
}

/// Which instances of a submission a step takes: with `--defer`, the `slow` ones come
/// last, in steps of their own; a timing step takes one.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    All,
    Fast,
    Slow,
    One(String),
}

impl Part {
    fn takes(&self, inst: &crate::compile::submission::Instance) -> bool {
        match self {
            Part::All => true,
            Part::Fast => !inst.slow,
            Part::Slow => inst.slow,
            Part::One(label) => inst.label == *label,
        }
    }

    fn note(&self) -> String {
        match self {
            Part::All => String::new(),
            Part::Fast => " (all but the slow instances)".into(),
            Part::Slow => " (slow instances, deferred)".into(),
            Part::One(label) => format!(" {label}"),
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Image => write!(f, "image"),
            Step::Verify(id, part) => write!(f, "verify {}{}", submission_id(id), part.note()),
            Step::Bench(id, part) => write!(f, "bench {}{}", submission_id(id), part.note()),
            Step::Profile(id) => write!(f, "profile {}", submission_id(id)),
            Step::Ct(id) => write!(f, "ct {}", submission_id(id)),
            Step::CtTiming(id, label) => write!(f, "ct timing {} {label}", submission_id(id)),
            Step::Sanitize(id) => write!(f, "sanitize {}", submission_id(id)),
        }
    }
}

/// True when every file below `prefix` (relative to `root`) is in the index, unchanged,
/// and there is at least one.
fn indexed(root: &Utf8Path, prefix: &Utf8Path) -> bool {
    indexed_where(root, |p| Utf8Path::new(p).starts_with(prefix))
}

/// `indexed` for the files of `dir` (relative to `root`) of `part`: one instance's
/// (`<label>__*`), so that another instance's missing or changed file is its own
/// step's; otherwise all of them.
fn indexed_part(root: &Utf8Path, dir: &Utf8Path, part: &Part) -> bool {
    let dir = dir.strip_prefix(root).unwrap_or(dir);
    match part {
        Part::One(label) => indexed_where(root, |p| {
            let p = Utf8Path::new(p);
            p.parent() == Some(dir) && p.file_name().is_some_and(|n| n.starts_with(&format!("{label}__")))
        }),
        _ => indexed(root, dir),
    }
}

fn indexed_where(root: &Utf8Path, under: impl Fn(&String) -> bool) -> bool {
    let Ok(problems) = evidence::check(root) else { return false };
    let Ok(index) = evidence::read_index(root) else { return false };
    problems.index.is_none()
        && index.keys().any(&under)
        && problems.refused.is_empty()
        && !problems.changed.iter().chain(&problems.missing).chain(&problems.extra).any(&under)
}

impl Campaign {
    /// Every instance of the manifest has a PASS made against today's KAT manifest,
    /// and the evidence is indexed.
    fn verify_done(&self, layout: &Layout, sub: &Submission) -> bool {
        let Ok(Some(summary)) = crate::evidence::schema::read::<Summary>(&layout.kat_summary(&sub.id)) else {
            return false;
        };
        let manifest_now = project::sha256_file(&sub.kat_manifest_path()).ok();
        let passed = |label: &str| summary.instances.iter().any(|i| i.label == label && i.status == Status::Pass);
        let rel = layout.kat_dir(&sub.id);
        manifest_now.as_deref() == Some(summary.kat_manifest_sha256.as_str())
            && sub.instances.iter().all(|i| passed(&i.label))
            && indexed(&self.out, rel.strip_prefix(&self.out).unwrap_or(&rel))
            && self.checked(&layout.kat_summary(&sub.id), |root, index, rel| {
                let manifest = crate::kat::Manifest::of(sub, &sub.kat_manifest_path())?;
                summary.instances.iter().try_for_each(|r| {
                    crate::kat::kept::check_kept(root, index, (rel, &manifest), r)
                        .with_context(|| format!("{} {}", sub.id, r.label))
                })
            })
    }

    /// A kept file is the indexed one and passes `check` (its figures derived again);
    /// otherwise the step runs again, and the warning names the file.
    fn checked(
        &self,
        path: &Utf8Path,
        check: impl FnOnce(&Utf8Path, &std::collections::BTreeMap<String, String>, &str) -> Result<()>,
    ) -> bool {
        let root = &self.out;
        let rel = path.strip_prefix(root).unwrap_or(path).to_string();
        let kept = evidence::read_index(root)
            .and_then(|index| evidence::indexed(root, &index, &rel).and_then(|()| check(root, &index, &rel)));
        kept.map_err(|e| crate::warning!("WARNING: {rel}: earlier result not kept, {e:#}; the step runs again")).is_ok()
    }

    /// Every timed instance of `part` has a current record of each of its operations.
    fn bench_done(&self, layout: &Layout, sub: &Submission, part: &Part) -> bool {
        let Ok(family) = sub.family() else { return false };
        let complete = sub.instances.iter().filter(|i| i.timed && part.takes(i)).all(|i| {
            let ops = family.ops_for(&[], i.passes).unwrap_or_default();
            ops.iter().all(|op| {
                let path = layout.record(&sub.id, &i.label, op.name());
                project::is_regular(&path)
                    && self.checked(&path, |_, _, _| {
                        let r: crate::evidence::schema::Record =
                            crate::evidence::schema::read(&path)?.context("vanished")?;
                        crate::measure::bench::check_figures(&r)
                    })
            })
        });
        complete && indexed_part(&self.out, &layout.records_dir(&sub.id), part)
    }

    /// The survey speaks for every instance (an interrupted profile leaves one for the
    /// instances it finished), and the evidence is indexed.
    fn profile_done(&self, layout: &Layout, sub: &Submission) -> bool {
        let rel = layout.profile_dir(&sub.id);
        let Ok(Some(survey)) = crate::evidence::schema::read::<Survey>(&layout.survey(&sub.id)) else { return false };
        sub.instances.iter().all(|i| survey.instances.iter().any(|s| s.label == i.label))
            && indexed(&self.out, rel.strip_prefix(&self.out).unwrap_or(&rel))
    }

    /// Every instance (of `part`) has a record of every operation `ct` checks, and they
    /// are indexed; with `timed`, each also holds the timing test its status asks for.
    fn ct_done(&self, layout: &Layout, sub: &Submission, (part, timed): (&Part, bool)) -> bool {
        let Some(ct) = sub.family().ok().and_then(|f| f.ct) else { return false };
        let complete = sub.instances.iter().filter(|i| part.takes(i)).all(|i| {
            ct.ops.iter().all(|op| {
                let path = layout.ct(&sub.id, &i.label, op.id);
                let read = || crate::evidence::schema::read::<crate::evidence::schema::CtRecord>(&path);
                // A record the memcheck step left for the timing step is no rejected one.
                let pending = || {
                    read().ok().flatten().is_none_or(|r| crate::ct::timing::wanted(op, r.status) && r.timing.is_none())
                };
                project::is_regular(&path)
                    && !(timed && pending())
                    && self.checked(&path, |_, _, _| crate::ct::check_kept(&read()?.context("vanished")?, sub))
            })
        });
        complete && indexed_part(&self.out, &layout.ct_dir(&sub.id), part)
    }

    /// Timing settings of one submission: the campaign's, with the profile's defaults.
    fn bench(&self, id: &str, ctx: &RunCtx, budget: Option<crate::measure::stats::TimeBudget>) -> Result<Bench> {
        Bench {
            inputs: self.inputs(Some(id)),
            // Each submission's family decides its operations.
            ops: Vec::new(),
            trials: self.trials,
            trial_target: None,
            iterations: None,
            cpu: self.cpu,
            allow_unfixed_host: self.allow_unfixed_host,
            quick: self.quick,
            no_baselines: false,
            // Per record: an interrupted bench step keeps the records it finished.
            resume: self.resume,
            slot: None,
            budget,
        }
        .with_profile(&ctx.profile)?
        .with_baselines(&ctx.profile)
    }

    /// The inputs of one submission's step over `part` of its instances.
    fn part_inputs(&self, id: &str, part: &Part) -> Result<Inputs> {
        let mut inputs = self.inputs(Some(id));
        if *part != Part::All {
            let sub = Submission::load(id)?;
            inputs.instances = sub.instances.iter().filter(|i| part.takes(i)).map(|i| i.label.clone()).collect();
        }
        Ok(inputs)
    }

    /// The inputs of one submission's step (or of none: the image step).
    fn inputs(&self, id: Option<&str>) -> Inputs {
        let ids = id.map(|i| vec![i.to_owned()]).unwrap_or_default();
        let mut inputs = Inputs::for_ids(ids, self.target.clone(), self.out.clone(), self.system.clone());
        let mine = |given: &[Given]| {
            let for_me = |g: &&Given| match (id, g.id.as_deref()) {
                (None, _) => false,
                (Some(_), None | Some(crate::compile::iccs::ID)) => true,
                (Some(id), Some(named)) => named == submission_id(id),
            };
            given.iter().filter(for_me).cloned().collect()
        };
        inputs.archive = mine(&self.archives);
        inputs.source_dir = mine(&self.source_dirs);
        inputs.memory = self.memory.clone();
        inputs.unsandboxed_host = self.unsandboxed_host;
        inputs
    }

    /// Every value and every source checked before the image step: a typo or a
    /// missing archive is found in the first second, all of them at once.
    fn check(&self, profile: &SystemProfile) -> Result<Vec<Submission>> {
        let (all, subs) = self.check_values(profile)?;
        all.check_archives(&subs)?;
        Ok(subs)
    }

    /// Every value but the archives: the selection's manifests (instances of other
    /// architectures dropped) and the inputs of all of them.
    fn check_values(&self, profile: &SystemProfile) -> Result<(Inputs, Vec<Submission>)> {
        let ids = profile.ids(&self.ids);
        let mut all = self.inputs(None);
        (all.ids, all.archive, all.source_dir) = (ids.clone(), self.archives.clone(), self.source_dirs.clone());
        all.check_given(&ids)?;
        crate::ui::check_out_dir(&self.out)?;
        let mut subs = ids.iter().map(|id| Submission::load(id)).collect::<Result<Vec<_>>>()?;
        let arch = profile.arch(self.target.arch);
        subs.iter_mut().for_each(|sub| drop_other_arches(sub, arch));
        all.check_host(&subs)?;
        Ok((all, subs))
    }

    /// The steps that run, in order.
    fn steps(&self, subs: &[Submission], names: &[String]) -> Vec<Step> {
        self.plan(subs, names).into_iter().filter(|p| p.skipped.is_none()).map(|p| p.step).collect()
    }

    /// Every step of the campaign, in order, each with why it is skipped (None: it runs).
    /// Steps name a submission as it was selected (an id, or a manifest's path).
    fn plan(&self, subs: &[Submission], names: &[String]) -> Vec<Planned> {
        let mut plan = vec![Planned::run(Step::Image)];
        let mut deferred = Vec::new();
        for (sub, name) in subs.iter().zip(names) {
            let sub = &Submission { id: name.clone(), ..sub.clone() };
            if sub.instances.is_empty() {
                let why = "every instance is built on other architectures only (manifest)";
                plan.push(Planned::skip(Step::Verify(sub.id.clone(), Part::All), why));
                continue;
            }
            let split = self.defer && sub.instances.iter().any(|i| i.slow);
            let part = if split { Part::Fast } else { Part::All };
            if sub.instances.iter().any(|i| part.takes(i)) {
                plan.push(Planned::run(Step::Verify(sub.id.clone(), part.clone())));
                plan.extend(self.bench_steps(sub, part));
            }
            plan.push(self.profile_step(sub, split));
            plan.extend(self.ct_steps(sub, split));
            plan.push(self.sanitize_step(sub, split));
            if split {
                deferred.push(Planned::run(Step::Verify(sub.id.clone(), Part::Slow)));
                deferred.extend(self.bench_steps(sub, Part::Slow));
            }
        }
        plan.extend(deferred);
        plan
    }

    /// The timing steps of `part`: one per timed instance, or one for all of them when
    /// the family has a same-run baseline (timed once per run, and compared only with
    /// records of its own run).
    fn bench_steps(&self, sub: &Submission, part: Part) -> Vec<Planned> {
        let whole = Step::Bench(sub.id.clone(), part.clone());
        if self.no_bench {
            return vec![Planned::skip(whole, "--no-bench")];
        } else if !timed_any(sub, &part) {
            return vec![Planned::skip(whole, "no instance is timed (timed = false in the manifest)")];
        } else if sub.family().map_or(true, |f| f.baseline.is_some()) {
            return vec![Planned::run(whole)];
        }
        let timed = sub.instances.iter().filter(|i| part.takes(i) && i.timed);
        timed.map(|i| Planned::run(Step::Bench(sub.id.clone(), Part::One(i.label.clone())))).collect()
    }

    fn profile_step(&self, sub: &Submission, split: bool) -> Planned {
        let why = match () {
            _ if self.no_bench => "--no-bench",
            _ if self.no_profile => "--no-profile",
            _ if sub.profile.is_none() => "the manifest has no [profile]",
            _ if split => "--defer splits its instances, and a profile runs whole",
            _ => return Planned::run(Step::Profile(sub.id.clone())),
        };
        Planned::skip(Step::Profile(sub.id.clone()), why)
    }

    /// ct's memcheck step, and a timing step per instance after it.
    fn ct_steps(&self, sub: &Submission, split: bool) -> Vec<Planned> {
        let memcheck = self.ct_step(sub, split);
        if memcheck.skipped.is_some() {
            return vec![memcheck];
        }
        let timing = sub.instances.iter().map(|i| Planned::run(Step::CtTiming(sub.id.clone(), i.label.clone())));
        std::iter::once(memcheck).chain(timing).collect()
    }

    fn ct_step(&self, sub: &Submission, split: bool) -> Planned {
        let step = Step::Ct(sub.id.clone());
        let refusal = crate::compile::recipe::ct_refusal(sub).unwrap_or_else(|e| Some(format!("{e:#}")));
        let why = match refusal {
            _ if self.no_ct => "--no-ct".to_owned(),
            // valgrind is pinned in an image: no ct step on the host toolchain.
            _ if self.target.engine == crate::evidence::domain::EngineChoice::Host => {
                "valgrind is pinned in an image: no ct on --engine host".to_owned()
            }
            Some(why) => why.strip_prefix(&format!("{}: ", sub.id)).map_or(why.clone(), str::to_owned),
            None if split => "--defer splits its instances, and ct runs whole".to_owned(),
            None => return Planned::run(step),
        };
        Planned::skip(step, why)
    }

    fn sanitize_step(&self, sub: &Submission, split: bool) -> Planned {
        let step = Step::Sanitize(sub.id.clone());
        let arch = crate::container::systems::SystemProfile::load(&self.system).map(|p| p.arch(self.target.arch));
        let refusal = arch.ok().and_then(|a| crate::sanitize::refusal(a, self.target.engine));
        let why = match () {
            _ if self.no_sanitize => "--no-sanitize".to_owned(),
            _ if refusal.is_some() => refusal.unwrap_or_default(),
            _ if !crate::sanitize::applies(sub) => "sanitize needs the cc recipe".to_owned(),
            _ if split => "--defer splits its instances, and sanitize runs whole".to_owned(),
            _ => return Planned::run(step),
        };
        Planned::skip(step, why)
    }

    /// `--archives DIR`: the candidates found there become the selection and their
    /// archives the `--archive` list; the missing ones are said, with what to fetch.
    fn select_from_folder(&mut self) -> Result<Vec<String>> {
        let Some(dir) = self.archive_dir.clone() else { return Ok(vec![]) };
        let ids = if self.ids.is_empty() { Submission::ids()? } else { self.ids.clone() };
        let subs = ids.iter().map(|id| Submission::load(id)).collect::<Result<Vec<_>>>()?;
        let matched = crate::compile::archives::Folder::scan(&dir)?.matched(&subs)?;
        let looked = subs.iter().filter(|s| matches!(s.source, crate::compile::submission::SourceSpec::Archive { .. }));
        crate::say!("{dir}: archives of {} of {} candidates found", matched.found.len(), looked.count());
        if !matched.missing.is_empty() {
            crate::say!("missing (not run):");
            for m in &matched.missing {
                crate::say!("  - {m}");
            }
        }
        // An archive whose code sits in a nested rar cannot run from the folder: said, left out.
        let nested: Vec<&str> = subs.iter().filter(|s| s.nested_refusal().is_some()).map(|s| s.id.as_str()).collect();
        for why in subs.iter().filter(|s| matched.found.contains(&s.id)).filter_map(Submission::nested_refusal) {
            crate::say!("not run: {why}");
        }
        let runs = |s: &Submission| matched.found.contains(&s.id) && !nested.contains(&s.id.as_str());
        if !subs.iter().any(runs) {
            return ui::usage(format!("--archives {dir}: no selected candidate's pinned archive is there"));
        }
        // The selection keeps the names it was given (a manifest may be given by path).
        self.ids = ids.iter().zip(&subs).filter(|(_, s)| runs(s)).map(|(i, _)| i.clone()).collect();
        self.archives
            .extend(matched.given.into_iter().filter(|g| !g.id.as_deref().is_some_and(|i| nested.contains(&i))));
        Ok(matched.missing)
    }

    pub fn run(mut self, sh: &Shell) -> Result<()> {
        let profile = SystemProfile::load(&self.system)?;
        let missing = self.select_from_folder()?;
        if self.dry_run {
            return self.dry_run(&profile, missing);
        }
        let subs = self.check(&profile)?;
        let layout = Layout::new(&self.out, &profile.evidence_name(profile.arch(self.target.arch)));
        let steps = self.steps(&subs, &profile.ids(&self.ids));
        let campaign_start = Instant::now();
        let division = self.division(&profile)?;
        let default_jobs = || division.as_ref().map_or_else(crate::compile::options::default_jobs, |d| d.others.len());
        let jobs = self.jobs.map_or_else(default_jobs, |j| j as usize).max(1);
        let pool = crate::sched::Pool {
            jobs,
            timing: division.as_ref().map_or(1, |d| d.timing.len()),
            shared: division.as_ref().is_some_and(|d| d.others.is_empty()),
        };
        let run = Run {
            campaign: &self,
            dir: sh.current_dir(),
            steps: &steps,
            subs: &subs,
            layout: &layout,
            state: State {
                profile: profile.clone(),
                ctx: std::sync::OnceLock::new(),
                gate: Default::default(),
                budget: self.budget_share(&steps, &subs, &profile.ids(&self.ids)),
            },
            side_by_side: jobs + pool.timing > 2,
            slots: Options {
                jobs: u32::try_from(jobs).unwrap_or(u32::MAX),
                timing_cores: pool.timing as u32,
                op_budget_s: None,
            },
            ended: std::sync::Mutex::new(Ended::new(steps.len())),
            division,
            activity: Default::default(),
        };
        let nodes = graph(&steps, &subs, self.defer, &Costs::here());
        say_pool(steps.len(), pool, run.division.as_ref());
        crate::sched::run(&nodes, pool, &run).map_err(|e| anyhow::anyhow!("campaign plan: {e}"))?;
        let ended = run.ended.into_inner().map_err(|_| anyhow::anyhow!("a campaign worker panicked"))?;
        if let Some(e) = ended.interrupted {
            return Err(e);
        }
        let mut report =
            CampaignReport { system: self.system.clone(), out: self.out.to_string(), missing, ..Default::default() };
        for (step, end) in steps.iter().zip(ended.outcomes) {
            let (outcome, secs, detail) = end.unwrap_or(("skipped", 0.0, Some("not run".into())));
            report.push(step, outcome, secs, detail);
        }
        report.tool_failure = ended.tool_failure;
        // The index once, at the end (each verify also keeps it current per instance).
        evidence::reindex(&self.out)?;
        report.seconds = campaign_start.elapsed().as_secs_f64();
        crate::say!("campaign on {} finished in {}", self.system, ui::clock(campaign_start.elapsed()));
        ui::emit(&report)?;
        report.outcome()
    }

    /// The cores the campaign times on and the rest, when it times on given cores
    /// (`--timing-cores`, `--cpu` or the profile's); the tool confines itself, and so
    /// the engines it starts, to the rest.
    fn division(&self, profile: &SystemProfile) -> Result<Option<crate::container::cores::Division>> {
        use crate::container::cores;
        let given = self.timing_cores.clone().or(self.cpu.or(profile.cpu).map(|c| vec![c]));
        let Some(timing) = given.filter(|_| !self.no_bench) else { return Ok(None) };
        let root = Utf8Path::new("/");
        let d = cores::divide(&timing, &cores::allowed(), |c| cores::siblings(root, c))
            .or_else(|why| ui::usage(format!("--timing-cores {}: {why}", cores::format_list(&timing))))?;
        if !d.others.is_empty() {
            cores::confine_self(&d.others)?;
        }
        Ok(Some(d))
    }

    /// `--dry-run`: every step and why some are skipped, and every missing archive, from
    /// the manifests alone (nothing built, no engine called). Exit 2 when one is missing,
    /// as the campaign itself stops then.
    fn dry_run(&self, profile: &SystemProfile, mut missing: Vec<String>) -> Result<()> {
        let (all, subs) = self.check_values(profile)?;
        let names = profile.ids(&self.ids);
        let arch = profile.arch(self.target.arch);
        crate::say!(
            "campaign --dry-run on {} ({}, toolchain {}, engine {}): nothing is built, no engine is called",
            self.system,
            arch.uname(),
            profile.toolchain,
            format!("{:?}", self.target.engine).to_lowercase()
        );
        let lacking = |id: &str| {
            let sub = subs.iter().zip(&names).find(|(_, n)| n.as_str() == id).map(|(s, _)| s)?;
            let iccs = all.missing_iccs(std::slice::from_ref(sub)).map(|_| "the ICCS API package".to_owned());
            all.missing_archive(sub).map(|_| "its archive".to_owned()).or(iccs)
        };
        let mut report =
            CampaignReport { system: self.system.clone(), out: self.out.to_string(), ..Default::default() };
        let mut tasks = Vec::new();
        for p in self.plan(&subs, &names) {
            let lacks = p.step.id().and_then(lacking).map(|w| format!("{w} is missing"));
            if p.skipped.is_none() {
                let sub = p.step.id().and_then(|id| names.iter().position(|n| n == id)).map(|n| &subs[n]);
                tasks.extend(p.step.tasks(sub, lacks.is_some()));
            }
            let why = p.skipped.or(lacks);
            match &why {
                None => crate::say!("  {}", p.step),
                Some(w) => crate::say!("  {}: skipped, {w}", p.step),
            }
            report.push(&p.step, if why.is_some() { "skipped" } else { "planned" }, 0.0, why);
        }
        let planned: Vec<Step> = self.steps(&subs, &names);
        let share = self.budget_share(&planned, &subs, &names);
        if let Some(b) = &share {
            crate::say!(
                "budget: {}: {} per timed operation",
                b.source,
                crate::measure::stats::humantime_secs(b.per_op)
            );
        }
        self.say_estimate(&tasks, share.map(|b| b.per_op.as_secs_f64()));
        missing.extend(all.missing_archives(&subs));
        if !missing.is_empty() {
            crate::say!("missing ({}):", missing.len());
            missing.iter().for_each(|m| crate::say!("  - {m}"));
        }
        report.missing = missing;
        ui::emit(&report)?;
        match report.missing.len() {
            0 => Ok(()),
            n => ui::usage(format!(
                "{n} archive(s) missing (listed above).\n{}",
                crate::compile::sources::SUPPLY_ARCHIVES
            )),
        }
    }

    /// The wall-time estimate of the planned tasks (`campaign_estimate`), bench's and ct's
    /// timed operations within `--budget`'s share when one is given.
    fn say_estimate(&self, tasks: &[crate::campaign_estimate::Task], op_budget_s: Option<f64>) {
        use crate::campaign_estimate as est;
        let timing = self.timing_cores.as_ref().map_or(1, Vec::len) as u32;
        let opts = est::Options { op_budget_s, ..est::Options::new(self.jobs, Some(timing)) };
        let costs = est::Costs::here();
        let (now, all) = est::split(tasks, &costs, opts);
        crate::say!("estimate ({}):", est::sources(&costs));
        est::lines(&now, opts).iter().for_each(|l| crate::say!("  {l}"));
        if all.tasks > now.tasks {
            crate::say!("with the missing archives supplied ({} more task(s)):", all.tasks - now.tasks);
            est::lines(&all, opts).iter().for_each(|l| crate::say!("  {l}"));
        }
    }

    /// With --resume: the step's evidence exists, is complete and matches the index.
    fn done(&self, step: &Step, layout: &Layout, sub: &Submission) -> bool {
        match step {
            Step::Image => false,
            Step::Verify(..) => self.verify_done(layout, sub),
            Step::Bench(_, part) => self.bench_done(layout, sub, part),
            Step::Profile(_) => self.profile_done(layout, sub),
            Step::Ct(_) => self.ct_done(layout, sub, (&Part::All, false)),
            Step::CtTiming(_, label) => self.ct_done(layout, sub, (&Part::One(label.clone()), true)),
            Step::Sanitize(_) => {
                let any = layout.sanitize(&sub.id, "-");
                let dir = any.parent().map(|d| layout.relative(d)).unwrap_or_default();
                crate::sanitize::done(layout, sub) && indexed(&layout.out, Utf8Path::new(&dir))
            }
        }
    }

    /// The run context of a step at `place`: the campaign's, its containers on the
    /// place's cores.
    fn ctx_at(state: &State, place: &Place) -> Result<RunCtx> {
        let ctx = state.ctx.get().context("no toolchain image: the image step failed")?;
        let env = crate::compile::builder::BuildEnv { cpus: place.cpus.clone(), ..ctx.env.clone() };
        Ok(RunCtx { env, ..ctx.clone() })
    }

    /// One step, in the campaign's one run context (the image step makes it).
    fn run_step(&self, sh: &Shell, step: &Step, (state, place, run): (&State, &Place, &Run)) -> Result<()> {
        match step {
            Step::Image => {
                let ctx = self.inputs(None).context(sh, state.profile.clone())?;
                if let Some(lock) = &ctx.env.lock {
                    crate::say!("  {} ({})", lock.tag, lock.gcc_version);
                }
                state.ctx.set(ctx).map_err(|_| anyhow::anyhow!("the image step ran twice"))
            }
            Step::Verify(id, part) => {
                let ctx = &Self::ctx_at(state, place)?;
                let verify = Verify {
                    inputs: self.part_inputs(id, part)?,
                    kat_manifest: None,
                    timeout: self.timeout,
                    resume: self.resume,
                    jobs: self.jobs,
                    kat_files: Vec::new(),
                };
                let work = verify.inputs.obtain(sh, &ctx.profile, |s| verify.check(s))?;
                let failed = verify.verify_all(sh, ctx, &work)?;
                if !failed.is_empty() {
                    return Err(ui::Findings(format!("instances did not pass ({})", failed.join(", "))).into());
                }
                Ok(())
            }
            Step::Ct(id) | Step::CtTiming(id, _) => {
                let ctx = &Self::ctx_at(state, place)?;
                let base = if self.quick { crate::ct::CtOptions::quick() } else { crate::ct::CtOptions::default() };
                let opts = base.clone().with_budget(state.budget.clone(), self.quick.then_some(base.measurements));
                let (opts, inputs) = match step {
                    Step::CtTiming(_, label) => (
                        crate::ct::CtOptions { parts: crate::ct::Parts::Timing, ..opts },
                        self.part_inputs(id, &Part::One(label.clone()))?,
                    ),
                    _ => (crate::ct::CtOptions { parts: crate::ct::Parts::Memcheck, ..opts }, self.inputs(Some(id))),
                };
                let work = inputs.obtain(sh, &ctx.profile, |sub| crate::ct::check(sub, &opts))?;
                // Findings and runs without a conclusion are the step's results (on the
                // pages); a failed run or build fails it.
                let seen = crate::ct::ct_all(sh, (&inputs, &opts), ctx, &work)?;
                if !seen.failures.is_empty() {
                    let msg = format!("constant-time runs that failed:\n  {}", seen.failures.join("\n  "));
                    return Err(ui::Findings(msg).into());
                }
                Ok(())
            }
            Step::Sanitize(id) => {
                let ctx = &Self::ctx_at(state, place)?;
                let san = crate::sanitize::Sanitize { inputs: self.inputs(Some(id)), timeout: None };
                let work = san.inputs.obtain(sh, &ctx.profile, crate::sanitize::check)?;
                // Findings are the step's results (on the pages); a failed run or build
                // fails it.
                let seen = san.sanitize_all(sh, ctx, &work)?;
                if !seen.failures.is_empty() {
                    let msg = format!("sanitizer runs that failed:\n  {}", seen.failures.join("\n  "));
                    return Err(ui::Findings(msg).into());
                }
                Ok(())
            }
            Step::Bench(id, _) | Step::Profile(id) => {
                let ctx = &Self::ctx_at(state, place)?;
                let mut bench = self.bench(id, ctx, state.budget.clone())?;
                if let Some(core) = place.core {
                    let division = run.division.clone().context("a timing core without a division")?;
                    let slot = TimingSlot { division, activity: run.activity.clone(), me: place.me };
                    (bench.cpu, bench.slot) = (Some(core), Some(slot));
                }
                if let Step::Bench(_, part) = step {
                    bench.inputs.instances = self.part_inputs(id, part)?.instances;
                }
                let gate = gate_once(&state.gate, &bench, ctx)?;
                let failures = if matches!(step, Step::Bench(..)) {
                    let work = bench.inputs.obtain(sh, &ctx.profile, |sub| bench.check(sub))?;
                    bench.bench_all(sh, ctx, &work, &gate)?
                } else {
                    // An unfinished profile runs whole (its records cannot be resumed).
                    let bench = Bench { resume: false, ..bench };
                    let work = bench.inputs.obtain(sh, &ctx.profile, |sub| profile::check(&bench, sub))?;
                    profile::profile_all(&bench, sh, (ctx, &gate), &work)?
                };
                if !failures.is_empty() {
                    let msg = format!("some instances could not be measured:\n  {}", failures.join("\n  "));
                    return Err(ui::Findings(msg).into());
                }
                Ok(())
            }
        }
    }
}

impl CampaignReport {
    fn push(&mut self, step: &Step, outcome: &str, seconds: f64, detail: Option<String>) {
        let step = step.to_string();
        self.steps.push(CampaignStep { step, outcome: outcome.into(), seconds, detail });
    }

    /// Exit 0 when every step was done or kept; a tool failure is exit 3, a candidate's
    /// failure exit 1.
    fn outcome(&self) -> Result<()> {
        let failed: Vec<&str> = self.steps.iter().filter(|s| s.outcome == "failed").map(|s| s.step.as_str()).collect();
        let msg = format!("{} step(s) failed: {}", failed.len(), failed.join("; "));
        match (failed.is_empty(), self.tool_failure) {
            (true, _) => Ok(()),
            (false, true) => bail!(msg),
            (false, false) => Err(ui::Findings(msg).into()),
        }
    }
}

/// What the steps of one campaign share: the run context the image step makes, and
/// the host gate.
struct State {
    profile: SystemProfile,
    ctx: std::sync::OnceLock<RunCtx>,
    gate: Gates,
    /// Each timed operation's share of `--budget`.
    budget: Option<crate::measure::stats::TimeBudget>,
}

impl Campaign {
    /// `--budget` in equal shares over the timed operations of `steps`.
    fn budget_share(
        &self,
        steps: &[Step],
        subs: &[Submission],
        names: &[String],
    ) -> Option<crate::measure::stats::TimeBudget> {
        let sub = |id: &str| names.iter().position(|n| n == id).map(|n| &subs[n]);
        let ops: u64 = steps.iter().filter_map(|s| Some(timed_ops(s, sub(s.id()?)?))).sum();
        crate::measure::stats::TimeBudget::share(self.budget?, ops)
    }
}

/// The operations a step times, each of which gets a share of the campaign's budget:
/// bench's records (its family's same-run baseline's too), profile's (two builds each),
/// ct's tests that are always timed (those on findings cannot be known before).
fn timed_ops(step: &Step, sub: &Submission) -> u64 {
    let Ok(family) = sub.family() else { return 0 };
    let count = |s: &Submission, part: &Part, ops: &dyn Fn(Option<u32>) -> usize| -> u64 {
        s.instances.iter().filter(|i| part.takes(i) && i.timed).map(|i| ops(i.passes) as u64).sum()
    };
    let bench = |p: Option<u32>| family.ops_for(&[], p).map_or(0, |o| o.len());
    match step {
        Step::Bench(_, part) => {
            let baseline = family.baseline.filter(|b| *b != sub.id).and_then(|b| Submission::load(b).ok());
            count(sub, part, &bench) + baseline.map_or(0, |b| count(&b, &Part::All, &bench))
        }
        Step::Profile(_) => 2 * count(sub, &Part::All, &|p| family.profile_ops_for(&[], p).map_or(0, |o| o.len())),
        // The timing part, one instance; memcheck (`Step::Ct`) is untimed.
        Step::CtTiming(..) => {
            family.ct.map_or(0, |c| c.ops.iter().filter(|o| o.timed == crate::family::CtTimed::Always).count()) as u64
        }
        _ => 0,
    }
}

/// The host gate, evaluated once per timing core (by its first timing step).
fn gate_once(gates: &Gates, bench: &Bench, ctx: &RunCtx) -> Result<Gate> {
    let mut gates = gates.lock().map_err(|_| anyhow::anyhow!("a campaign worker panicked"))?;
    match gates.get(&bench.cpu) {
        Some(g) => Ok(g.clone()),
        None => Ok(gates.entry(bench.cpu).or_insert(bench.gate(&ctx.profile)?).clone()),
    }
}

type Gates = std::sync::Mutex<std::collections::BTreeMap<Option<usize>, Gate>>;

/// How the campaign's work is spread, said once at the start.
fn say_pool(steps: usize, pool: crate::sched::Pool, division: Option<&crate::container::cores::Division>) {
    use crate::container::cores::format_list;
    let timing = match division {
        Some(d) if d.others.is_empty() => format!(
            "timing on cores {} (one trial container per core); no core is left for the other steps, which \
             take turns with the timing steps",
            format_list(&d.timing)
        ),
        Some(d) => format!(
            "timing on cores {} (one trial container per core); the other steps and the tool on cores {}",
            format_list(&d.timing),
            format_list(&d.others)
        ),
        None => "timing steps one at a time, on no core of their own (no --timing-cores or --cpu)".to_owned(),
    };
    crate::say!("campaign: {steps} steps, up to {} untimed at a time (--jobs); {timing}", pool.jobs);
}

/// How the steps ended so far, by index: (outcome, seconds, detail) as reported; the
/// interruption, if one came; the costs learnt (this run's, and this machine's before:
/// no prior, a kind without a cost is said).
struct Ended {
    outcomes: Vec<Option<(&'static str, f64, Option<String>)>>,
    tool_failure: bool,
    interrupted: Option<anyhow::Error>,
    costs: Costs,
}

impl Ended {
    fn new(n: usize) -> Ended {
        let costs = Costs::here().without_priors();
        Ended { outcomes: vec![None; n], tool_failure: false, interrupted: None, costs }
    }
}

/// One campaign run as the scheduler's work: each step on a worker with a shell of its
/// own, its outcome committed as it ends.
struct Run<'a> {
    campaign: &'a Campaign,
    /// The folder every worker's shell works in (the checkout).
    dir: std::path::PathBuf,
    steps: &'a [Step],
    subs: &'a [Submission],
    layout: &'a Layout,
    state: State,
    /// Several steps at once: each line says whose it is.
    side_by_side: bool,
    /// The workers and timing slots, for the time left.
    slots: Options,
    ended: std::sync::Mutex<Ended>,
    /// The timing cores and the rest, when given.
    division: Option<crate::container::cores::Division>,
    activity: std::sync::Arc<crate::container::cores::Activity>,
}

impl Run<'_> {
    fn label(&self, n: usize) -> String {
        format!("[{}/{}] {}", n + 1, self.steps.len(), self.steps[n])
    }

    fn sub(&self, step: &Step) -> Option<&Submission> {
        self.subs.iter().find(|s| step.id().map(submission_id) == Some(s.id.as_str()))
    }

    fn end(
        &self,
        n: usize,
        outcome: &'static str,
        secs: f64,
        detail: Option<String>,
    ) -> std::sync::MutexGuard<'_, Ended> {
        let mut ended = self.ended.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        ended.outcomes[n] = Some((outcome, secs, detail));
        ended
    }

    /// The tasks of the steps that have not ended, for the estimate of what is left.
    fn remaining(&self, ended: &Ended) -> Vec<Task> {
        let open = self.steps.iter().zip(&ended.outcomes).filter(|(_, o)| o.is_none());
        open.flat_map(|(s, _)| s.tasks(self.sub(s), false)).collect()
    }

    /// Where step `n` runs: a timing step on its slot's core, the others on the cores left.
    fn place(&self, n: usize, slot: Option<usize>) -> Place {
        let core = slot.zip(self.division.as_ref()).map(|(s, d)| d.timing[s]);
        let others = self.division.as_ref().map(|d| d.others.clone()).filter(|o| !o.is_empty());
        let cpus = if slot.is_some() { core.map(|c| vec![c]) } else { others };
        let where_ = core.map_or_else(String::new, |c| format!(" (core {c})"));
        Place { core, cpus, me: self.activity.begin(format!("{}{where_}", self.steps[n])) }
    }

    fn step(&self, n: usize, slot: Option<usize>) -> Result<crate::sched::Verdict> {
        use crate::sched::Verdict;
        let (c, step, label) = (self.campaign, &self.steps[n], self.label(n));
        let sub = self.sub(step);
        // Another step may be writing the index: read it when it is whole.
        if c.resume && sub.is_some_and(|s| evidence::settled(|| c.done(step, self.layout, s))) {
            crate::say!("{label}: evidence present and indexed, skipped (--resume)");
            drop(self.end(n, "kept", 0.0, None));
            return Ok(Verdict::Pass);
        }
        let tasks = step.tasks(sub, false);
        let units = step.units(sub);
        let estimate = self.ended.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.costs.of(&tasks);
        crate::say!("{label} ...{}", estimate.map_or(String::new(), |e| format!(" (about {})", ui::clock(e))));
        let sh = Shell::new()?;
        sh.change_dir(&self.dir);
        let live = ui::progress(label.clone(), estimate);
        let place = self.place(n, slot);
        let result = c.run_step(&sh, step, (&self.state, &place, self)).map_err(|e| crate::doctor::explain(e, &sh));
        self.activity.end(place.me);
        let secs = live.elapsed().as_secs_f64();
        drop(live);
        match result {
            Ok(()) => {
                let mut ended = self.end(n, "done", secs, None);
                ended.costs.learn(step.kind(), units, secs);
                let left = crate::campaign_estimate::left(&self.remaining(&ended), &ended.costs, self.slots);
                drop(ended);
                crate::say!("{label}: done in {secs:.1} s; {left}");
                Ok(Verdict::Pass)
            }
            Err(e) if e.is::<Interrupted>() => {
                let mut ended = self.ended.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                ended.interrupted.get_or_insert(e);
                Ok(Verdict::Stop)
            }
            Err(e) => {
                crate::say!("{label}: FAILED after {secs:.1} s: {e:#}");
                let mut ended = self.end(n, "failed", secs, Some(format!("{e:#}")));
                ended.tool_failure |= crate::ui::exit_code(&e) == crate::ui::exit::FAILURE;
                Ok(Verdict::Fail)
            }
        }
    }
}

impl crate::sched::Work for Run<'_> {
    fn run(&self, n: usize, slot: Option<usize>) -> crate::sched::Verdict {
        let _tag = self.side_by_side.then(|| ui::prefix(self.steps[n].id().map_or("campaign", submission_id)));
        self.step(n, slot).unwrap_or_else(|e| {
            crate::say!("{}: FAILED: {e:#}", self.label(n));
            self.end(n, "failed", 0.0, Some(format!("{e:#}"))).tool_failure = true;
            crate::sched::Verdict::Fail
        })
    }

    fn skipped(&self, n: usize, because: usize) {
        let _tag = self.side_by_side.then(|| ui::prefix(self.steps[n].id().map_or("campaign", submission_id)));
        let (label, why) = match &self.steps[because] {
            Step::Verify(id, _) => {
                (format!("verify {id} did not pass (no timing without passing KATs)"), "verify did not pass".to_owned())
            }
            other => (format!("{other} did not finish"), format!("{other} did not finish")),
        };
        crate::say!("{}: skipped, {label}", self.label(n));
        drop(self.end(n, "skipped", 0.0, Some(why)));
    }
}

/// The campaign's steps as a graph: everything needs the image; a submission's other
/// steps need each of its verify steps before them; its slow instances' verify waits for
/// the others' (one summary file); with `--defer` the slow parts wait for every other
/// step. A ct timing step follows its submission's memcheck step (whose records it
/// completes). Bench, profile and ct's timing test hold the timing resource. Weights are
/// the steps' expected seconds (`costs`), so slow work starts first.
fn graph(steps: &[Step], subs: &[Submission], defer: bool, costs: &Costs) -> Vec<crate::sched::Node> {
    let sub = |s: &Step| subs.iter().find(|x| s.id().map(submission_id) == Some(x.id.as_str()));
    let deferred = |s: &Step| match s {
        Step::Verify(_, Part::Slow) | Step::Bench(_, Part::Slow) => true,
        Step::Bench(_, Part::One(label)) => {
            defer && sub(s).is_some_and(|x| x.instances.iter().any(|i| i.label == *label && i.slow))
        }
        _ => false,
    };
    let mut nodes = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        let tasks = step.tasks(sub(step), false);
        let mut node = crate::sched::Node {
            timing: step.kind().timed(),
            weight: costs.of(&tasks).map_or(1.0, |d| d.as_secs_f64()),
            ..Default::default()
        };
        let earlier = steps[..n].iter().enumerate();
        node.needs.extend(earlier.clone().filter(|(_, s)| **s == Step::Image).map(|(i, _)| i));
        let verifies = earlier.clone().filter(|(_, s)| matches!(s, Step::Verify(..)) && s.id() == step.id());
        if matches!(step, Step::Verify(..)) {
            node.after.extend(verifies.map(|(i, _)| i));
        } else {
            node.needs.extend(verifies.map(|(i, _)| i));
        }
        // After, not needs: a memcheck step that failed for one instance (a failed build,
        // a failed run) leaves the other instances' records to time, as one ct run did.
        if let Step::CtTiming(id, _) = step {
            node.after.extend(earlier.filter(|(_, s)| **s == Step::Ct(id.clone())).map(|(i, _)| i));
        }
        if defer && deferred(step) {
            node.after.extend(steps.iter().enumerate().filter(|(_, s)| !deferred(s)).map(|(i, _)| i));
        }
        nodes.push(node);
    }
    nodes
}

impl Step {
    fn id(&self) -> Option<&str> {
        match self {
            Step::Image => None,
            Step::Verify(id, _)
            | Step::Bench(id, _)
            | Step::Profile(id)
            | Step::Ct(id)
            | Step::CtTiming(id, _)
            | Step::Sanitize(id) => Some(id),
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Step::Image => Kind::Image,
            Step::Verify(..) => Kind::Verify,
            Step::Bench(..) => Kind::Bench,
            Step::Profile(_) => Kind::Profile,
            Step::Ct(_) => Kind::Ct,
            Step::CtTiming(..) => Kind::CtTiming,
            Step::Sanitize(_) => Kind::Sanitize,
        }
    }

    /// The instances the step takes.
    fn part(&self) -> Part {
        match self {
            Step::Verify(_, p) | Step::Bench(_, p) => p.clone(),
            Step::CtTiming(_, label) => Part::One(label.clone()),
            _ => Part::All,
        }
    }

    /// How much work the step is, in units of its kind (instances, or records).
    fn units(&self, sub: Option<&Submission>) -> f64 {
        self.tasks(sub, false).iter().map(|t| t.units).sum()
    }

    /// The estimate's tasks of this step: one per instance it takes (the image: one),
    /// each in units of its kind: an instance verified, profiled or sanitized (a KAT file
    /// of a family with several counting once more), an operation timed or checked.
    fn tasks(&self, sub: Option<&Submission>, blocked: bool) -> Vec<Task> {
        let kind = self.kind();
        let image = Task { kind, id: String::new(), label: None, units: 1.0, slow: None, blocked };
        let Some(sub) = sub.filter(|_| *self != Step::Image) else { return vec![image] };
        let family = sub.family().ok();
        let files = family.as_ref().map_or(1, |f| f.kat_parts.len()) as f64;
        let default_ops = family.as_ref().map_or(1, |f| f.default_ops().len()) as f64;
        let ct_ops = family.as_ref().and_then(|f| f.ct).map_or(Vec::new(), |c| c.ops.to_vec());
        let always = ct_ops.iter().filter(|o| o.timed == crate::family::CtTimed::Always).count().max(1);
        let units = |i: &crate::compile::submission::Instance| match kind {
            Kind::Image => 1.0,
            Kind::Verify => files,
            Kind::Profile | Kind::Sanitize => 1.0,
            Kind::Bench => family.as_ref().and_then(|f| f.ops_for(&[], i.passes).ok()).map_or(1, |o| o.len()) as f64,
            Kind::Ct => ct_ops.len().max(1) as f64,
            // The operations always timed; one with a finding is timed too.
            Kind::CtTiming => always as f64,
        };
        let slow = |i: &crate::compile::submission::Instance| {
            let limit = i.timeout.unwrap_or(crate::compile::options::KAT_TIMEOUT_SECS);
            i.slow.then_some(Slow { kat_limit_s: limit as f64, kat_records: i.kat_records, ops: default_ops })
        };
        let timed_only = matches!(kind, Kind::Bench | Kind::Profile);
        let part = self.part();
        (sub.instances.iter().filter(|i| part.takes(i) && (i.timed || !timed_only)))
            .map(|i| Task { label: Some(i.label.clone()), units: units(i), slow: slow(i), ..image.clone() })
            .map(|t| Task { id: submission_id(&sub.id).to_owned(), ..t })
            .collect()
    }
}

/// Instances the manifest restricts to other architectures leave the campaign (said
/// once; they are no failure and need no step); a submission left with none has no steps.
fn drop_other_arches(sub: &mut Submission, arch: crate::evidence::domain::Arch) {
    let not: Vec<(String, String)> =
        sub.instances.iter().filter_map(|i| sub.not_built_on(i, arch).map(|w| (i.label.clone(), w))).collect();
    for (label, why) in &not {
        crate::say!("{} {label}: {why}, on {}", sub.id, arch.uname());
    }
    sub.instances.retain(|i| !not.iter().any(|(l, _)| *l == i.label));
}

/// Some instance of `part` is timed (`timed = false` ones are verified only).
fn timed_any(sub: &Submission, part: &Part) -> bool {
    let untimed: Vec<&str> =
        sub.instances.iter().filter(|i| part.takes(i) && !i.timed).map(|i| i.label.as_str()).collect();
    for label in &untimed {
        crate::say!("{} {label}: {}", sub.id, crate::measure::bench::NOT_TIMED);
    }
    sub.instances.iter().any(|i| part.takes(i) && i.timed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `campaign --out <out>` as parsed, and the local layout under it.
    fn campaign_in(out: &Utf8Path) -> (Campaign, Layout) {
        use clap::Parser;
        let x = crate::flags::Xtask::parse_from(["xtask", "campaign", "--out", out.as_str()]);
        let crate::flags::Cmd::Campaign(c) = x.cmd else { panic!() };
        (c.into(), Layout::new(out, "local"))
    }

    /// kem-01 is x86-64 only by its manifest: on AArch64 the campaign has no step for
    /// it; Garnet_1024_DM4x4 is verified, never timed, and hash-11's bench is still a step.
    #[test]
    fn instances_of_another_architecture_leave_the_campaign_and_untimed_ones_its_bench() {
        let t = tempfile::tempdir().unwrap();
        let (c, _) = campaign_in(Utf8Path::from_path(t.path()).unwrap());
        let mut kem = Submission::load("kem-01").unwrap();
        drop_other_arches(&mut kem, crate::evidence::domain::Arch::X86_64);
        assert_eq!(kem.instances.len(), 3, "built on x86-64");
        drop_other_arches(&mut kem, crate::evidence::domain::Arch::Aarch64);
        assert!(kem.instances.is_empty());
        let garnet = Submission::load("hash-11").unwrap();
        assert!(garnet.instances.iter().any(|i| i.label == "Garnet_1024_DM4x4" && !i.timed));
        let steps = c.steps(&[kem, garnet.clone()], &["kem-01".into(), "hash-11".into()]);
        let names: Vec<String> = steps.iter().map(|s| s.to_string()).collect();
        assert!(!names.iter().any(|s| s.contains("kem-01")), "{names:?}");
        assert!(names.iter().any(|s| s.starts_with("bench hash-11")), "{names:?}");
        let mut untimed = garnet;
        untimed.instances.iter_mut().for_each(|i| i.timed = false);
        let steps = c.steps(&[untimed], &["hash-11".into()]);
        assert!(!steps.iter().any(|s| matches!(s, Step::Bench(..))), "nothing to time");
    }

    #[test]
    fn a_profile_is_done_only_when_its_survey_covers_every_instance() {
        let t = tempfile::tempdir().unwrap();
        let out = Utf8Path::from_path(t.path()).unwrap();
        let (c, layout) = campaign_in(out);
        let sub = Submission::load("pqclean-ml-kem").unwrap();
        let golden = project::root().join("xtask/tests/golden/survey.json");
        let mut survey: Survey = crate::evidence::schema::read(&golden).unwrap().unwrap();
        assert_eq!(survey.instances.len(), 1, "the golden survey speaks for ML-KEM-512 only");
        crate::evidence::schema::write(&layout.survey(&sub.id), &survey).unwrap();
        evidence::write_index(out).unwrap();
        assert!(!c.profile_done(&layout, &sub), "an interrupted profile's survey is not a finished profile");
        for label in ["ML-KEM-768", "ML-KEM-1024"] {
            let mut i = survey.instances[0].clone();
            i.label = label.into();
            survey.instances.push(i);
        }
        crate::evidence::schema::write(&layout.survey(&sub.id), &survey).unwrap();
        evidence::write_index(out).unwrap();
        assert!(c.profile_done(&layout, &sub));
    }

    #[test]
    fn a_bench_is_done_when_every_operation_of_its_family_is_recorded() {
        let t = tempfile::tempdir().unwrap();
        let out = Utf8Path::from_path(t.path()).unwrap();
        let (c, layout) = campaign_in(out);
        let sub = Submission::load("pqclean-ml-dsa").unwrap();
        let golden = project::root().join("xtask/tests/golden/record.json");
        let record: crate::evidence::schema::Record = crate::evidence::schema::read(&golden).unwrap().unwrap();
        let ops = sub.family().unwrap().default_ops();
        assert_eq!(ops.len(), 4, "keygen, sign, verify, sign_msgs");
        for (n, inst) in sub.instances.iter().enumerate() {
            for (k, op) in ops.iter().enumerate() {
                if n == 2 && k == 3 {
                    continue; // ML-DSA-87 sign_msgs: not timed yet
                }
                let mut r = record.clone();
                (r.id, r.label, r.op) = (sub.id.clone(), inst.label.clone(), op.clone());
                crate::evidence::schema::write(&layout.record(&sub.id, &inst.label, op.name()), &r).unwrap();
            }
        }
        evidence::write_index(out).unwrap();
        assert!(!c.bench_done(&layout, &sub, &Part::All), "a signature's sign_msgs is one of its operations");
        // Per instance: the others' steps are done.
        assert!(c.bench_done(&layout, &sub, &Part::One("ML-DSA-44".into())));
        assert!(!c.bench_done(&layout, &sub, &Part::One("ML-DSA-87".into())));
        let mut r = record.clone();
        (r.id, r.label, r.op) = (sub.id.clone(), "ML-DSA-87".into(), ops[3].clone());
        crate::evidence::schema::write(&layout.record(&sub.id, "ML-DSA-87", "sign_msgs"), &r).unwrap();
        evidence::write_index(out).unwrap();
        assert!(c.bench_done(&layout, &sub, &Part::All));
        // A figure edited and indexed again by hand: not a step done.
        r.aggregate.mean_ns /= 2.0;
        crate::evidence::schema::write(&layout.record(&sub.id, "ML-DSA-87", "sign_msgs"), &r).unwrap();
        evidence::write_index(out).unwrap();
        assert!(!c.bench_done(&layout, &sub, &Part::All), "its figures do not follow from its trials");
        assert!(!c.bench_done(&layout, &sub, &Part::One("ML-DSA-87".into())));
        assert!(c.bench_done(&layout, &sub, &Part::One("ML-DSA-65".into())));
        // Another instance's record lost since the index: this instance's step is done.
        std::fs::remove_file(layout.record(&sub.id, "ML-DSA-87", "sign_msgs")).unwrap();
        assert!(c.bench_done(&layout, &sub, &Part::One("ML-DSA-65".into())));
        assert!(!c.bench_done(&layout, &sub, &Part::All));
    }

    #[test]
    fn a_key_exchange_bench_is_done_with_the_passes_its_instances_have() {
        let t = tempfile::tempdir().unwrap();
        let out = Utf8Path::from_path(t.path()).unwrap();
        let (c, layout) = campaign_in(out);
        let sub = Submission::load("kex-02").unwrap();
        let golden = project::root().join("xtask/tests/golden/record.json");
        let record: crate::evidence::schema::Record = crate::evidence::schema::read(&golden).unwrap().unwrap();
        let family = sub.family().unwrap();
        let write = |label: &str, op: &str| {
            let mut r = record.clone();
            (r.id, r.label, r.op) = (sub.id.clone(), label.to_owned(), crate::family::OpId::new(op));
            crate::evidence::schema::write(&layout.record(&sub.id, label, op), &r).unwrap();
        };
        for inst in &sub.instances {
            let ops = family.ops_for(&[], inst.passes).unwrap();
            let names: Vec<&str> = ops.iter().map(|o| o.name()).collect();
            assert_eq!(
                names,
                ["exchange", "init_a", "init_b", "pass1", "pass2", "pass3", "pass4", "derive_a", "derive_b"]
            );
            ops.iter()
                .filter(|o| o.name() != "pass4" || inst.label != "AFS_KEX_C512")
                .for_each(|o| write(&inst.label, o.name()));
        }
        evidence::write_index(out).unwrap();
        assert!(!c.bench_done(&layout, &sub, &Part::All), "pass 4 of a 4-pass instance is one of its operations");
        write("AFS_KEX_C512", "pass4");
        evidence::write_index(out).unwrap();
        assert!(c.bench_done(&layout, &sub, &Part::All), "passes 5 to 8 are not");
    }

    /// The steps of `subs` (by id) and their graph.
    fn planned(c: &Campaign, subs: &[Submission]) -> (Vec<Step>, Vec<crate::sched::Node>) {
        let names: Vec<String> = subs.iter().map(|s| s.id.clone()).collect();
        let steps = c.steps(subs, &names);
        let nodes = graph(&steps, subs, c.defer, &Costs::default());
        (steps, nodes)
    }

    fn position(steps: &[Step], name: &str) -> usize {
        steps.iter().position(|x| x.to_string() == name).unwrap_or_else(|| panic!("{name}: {steps:?}"))
    }

    /// Two submissions: each step needs the image and its own verify, never the other
    /// submission's; timing steps (one per instance) hold the timing resource, ct's
    /// memcheck does not and its timing steps follow it; `--defer` puts the slow parts
    /// after every other step, and a slow instance weighs more.
    #[test]
    fn the_campaign_graph_links_each_step_to_its_own_submission() {
        let t = tempfile::tempdir().unwrap();
        let (mut c, _) = campaign_in(Utf8Path::from_path(t.path()).unwrap());
        c.no_sanitize = true;
        let (kem, sig) = (Submission::load("pqclean-ml-kem").unwrap(), Submission::load("pqclean-ml-dsa").unwrap());
        let (steps, nodes) = planned(&c, &[kem.clone(), sig.clone()]);
        let at = |s: &str| position(&steps, s);
        let names: Vec<String> = steps.iter().map(ToString::to_string).collect();
        assert_eq!(
            names[..10],
            [
                "image",
                "verify pqclean-ml-kem",
                "bench pqclean-ml-kem ML-KEM-512",
                "bench pqclean-ml-kem ML-KEM-768",
                "bench pqclean-ml-kem ML-KEM-1024",
                "profile pqclean-ml-kem",
                "ct pqclean-ml-kem",
                "ct timing pqclean-ml-kem ML-KEM-512",
                "ct timing pqclean-ml-kem ML-KEM-768",
                "ct timing pqclean-ml-kem ML-KEM-1024",
            ]
        );
        assert!(nodes[at("image")].needs.is_empty());
        let bench = &nodes[at("bench pqclean-ml-dsa ML-DSA-65")];
        assert_eq!(bench.needs, [at("image"), at("verify pqclean-ml-dsa")]);
        assert!(bench.timing && !nodes[at("verify pqclean-ml-kem")].timing);
        assert!(!nodes[at("ct pqclean-ml-kem")].timing, "memcheck runs beside other work");
        let ct_timing = &nodes[at("ct timing pqclean-ml-kem ML-KEM-768")];
        assert!(ct_timing.timing);
        assert_eq!(ct_timing.needs, [at("image"), at("verify pqclean-ml-kem")]);
        assert_eq!(ct_timing.after, [at("ct pqclean-ml-kem")], "it completes the memcheck records");
        assert_eq!(
            nodes[at("verify pqclean-ml-dsa")].needs,
            [at("image")],
            "verifies of two submissions go side by side"
        );
        // Weights in seconds of the priors: a KEM instance's bench is 3 operations of 30 s,
        // a signature's 4 (sign_msgs too).
        assert_eq!(nodes[at("bench pqclean-ml-kem ML-KEM-512")].weight, 90.0);
        assert_eq!(nodes[at("bench pqclean-ml-dsa ML-DSA-87")].weight, 120.0);
        assert_eq!(nodes[at("verify pqclean-ml-kem")].weight, 180.0);

        // --defer with a slow instance: its verify follows the others' verify (one
        // summary) and every step not deferred; its bench needs both verifies.
        let mut slow = sig.clone();
        slow.instances[2].slow = true;
        c.defer = true;
        let (steps, nodes) = planned(&c, &[kem.clone(), slow.clone()]);
        let at = |s: &str| position(&steps, s);
        let (fast, late) = (
            at("verify pqclean-ml-dsa (all but the slow instances)"),
            at("verify pqclean-ml-dsa (slow instances, deferred)"),
        );
        assert!(
            nodes[late].after.contains(&fast) && nodes[late].after.contains(&at("bench pqclean-ml-kem ML-KEM-512"))
        );
        assert!(!nodes[late].needs.contains(&fast), "a failed fast part does not stop the slow one's KATs");
        let slow_bench = at("bench pqclean-ml-dsa ML-DSA-87");
        assert!(slow_bench > late, "listed with the deferred steps");
        assert_eq!(nodes[slow_bench].needs, [at("image"), fast, late]);
        assert!(nodes[slow_bench].after.contains(&at("bench pqclean-ml-dsa ML-DSA-44")), "deferred");
        assert_eq!(nodes[at("bench pqclean-ml-dsa ML-DSA-44")].needs, [at("image"), fast]);
        let one = Step::Verify("pqclean-ml-dsa".into(), Part::All);
        let weight = |s: &Submission| Costs::default().of(&one.tasks(Some(s), false)).unwrap();
        assert!(weight(&slow) > weight(&sig), "a slow instance weighs more");
    }

    /// kem-07's BRQC instances: a bench step each, the slow one (by its KAT limit)
    /// heaviest, so the scheduler starts it first; a hash function's four KAT files
    /// weigh on its verify, and its bench runs whole (its same-run baseline once).
    #[test]
    fn timing_steps_are_per_instance_and_slow_ones_weigh_most() {
        let t = tempfile::tempdir().unwrap();
        let (mut c, _) = campaign_in(Utf8Path::from_path(t.path()).unwrap());
        (c.no_sanitize, c.no_ct, c.no_profile) = (true, true, true);
        let mut kem = Submission::load("kem-07").unwrap();
        let labels: Vec<String> = kem.instances.iter().map(|i| i.label.clone()).collect();
        kem.instances[1].slow = true;
        let hash = Submission::load("hash-01").unwrap();
        let (steps, nodes) = planned(&c, &[kem.clone(), hash.clone()]);
        let at = |s: &str| position(&steps, s);
        let bench = |l: &str| at(&format!("bench kem-07 {l}"));
        for l in &labels {
            let n = &nodes[bench(l)];
            assert!(n.timing && n.needs == [0, at("verify kem-07")], "{l}: {n:?}");
        }
        let (plain, heavy) = (nodes[bench(&labels[0])].weight, nodes[bench(&labels[1])].weight);
        // 3 operations × 8 calls of a KAT record's share of its 600 s limit, against 3 × 30 s.
        assert_eq!((heavy, plain), (480.0, 90.0));
        let whole = at("bench hash-01");
        assert!(!steps.iter().any(|s| matches!(s, Step::Bench(id, Part::One(_)) if id == "hash-01")), "{steps:?}");
        assert!(nodes[whole].timing);
        let files = hash.family().unwrap().kat_parts.len() as f64;
        assert_eq!(files, 4.0);
        let verify = &nodes[at("verify hash-01")];
        assert_eq!(verify.weight, 60.0 * files * hash.instances.len() as f64, "{:?}", hash.instances.len());
        // A key exchange's bench counts each instance's own operations.
        let kex = Submission::load("kex-02").unwrap();
        let (steps, _) = planned(&c, std::slice::from_ref(&kex));
        let units: Vec<f64> =
            steps.iter().filter(|s| matches!(s, Step::Bench(..))).map(|s| s.units(Some(&kex))).collect();
        let want: Vec<f64> = (kex.instances.iter())
            .map(|i| kex.family().unwrap().ops_for(&[], i.passes).unwrap().len() as f64)
            .collect();
        assert_eq!(units, want);
    }

    /// ct's two parts resume apart: records without their timing test are the memcheck
    /// step done and the timing step not.
    #[test]
    fn a_ct_timing_step_is_done_only_when_the_records_hold_their_timing_test() {
        let t = tempfile::tempdir().unwrap();
        let out = Utf8Path::from_path(t.path()).unwrap();
        let (c, layout) = campaign_in(out);
        let sub = Submission::load("pqclean-ml-kem").unwrap();
        let golden = project::root().join("xtask/tests/golden/ct_record.json");
        let rec: crate::evidence::schema::CtRecord = crate::evidence::schema::read(&golden).unwrap().unwrap();
        let ct = sub.family().unwrap().ct.unwrap();
        let write = |label: &str, timing: bool| {
            for op in ct.ops {
                let mut r = rec.clone();
                (r.id, r.label, r.op) = (sub.id.clone(), label.to_owned(), crate::family::OpId::new(op.id));
                (r.status, r.findings) = (crate::evidence::schema::CtStatus::NoneFound, vec![]);
                (r.secret_bytes, r.client_requests, r.public_derived) = (32, 0, vec![]);
                let wanted = crate::ct::timing::wanted(op, r.status);
                r.timing = (timing && wanted).then(|| crate::ct::timing::not_run("test", 100));
                crate::evidence::schema::write(&layout.ct(&sub.id, label, op.id), &r).unwrap();
            }
        };
        for i in &sub.instances {
            write(&i.label, i.label != "ML-KEM-768");
        }
        evidence::write_index(out).unwrap();
        let done = |s: Step| c.done(&s, &layout, &sub);
        assert!(done(Step::Ct(sub.id.clone())), "every memcheck record is there");
        assert!(done(Step::CtTiming(sub.id.clone(), "ML-KEM-512".into())));
        assert!(!done(Step::CtTiming(sub.id.clone(), "ML-KEM-768".into())), "its dec has no timing test yet");
        write("ML-KEM-768", true);
        evidence::write_index(out).unwrap();
        assert!(done(Step::CtTiming(sub.id.clone(), "ML-KEM-768".into())));
    }

    #[test]
    fn estimates_learn_seconds_per_unit_of_each_kind_and_the_time_left_is_wall_time() {
        let mut costs = Costs::default().without_priors();
        let (v, b) = (Step::Verify("a".into(), Part::All), Step::Bench("a".into(), Part::All));
        let sub = Submission::load("pqclean-ml-kem").unwrap();
        assert_eq!(costs.of(&v.tasks(Some(&sub), false)), None, "no verify has run: no guess");
        costs.learn(Kind::Image, 1.0, 2.0);
        costs.learn(Kind::Verify, 3.0, 30.0);
        let one = Step::Verify("a".into(), Part::One("ML-KEM-512".into()));
        assert_eq!(costs.of(&one.tasks(Some(&sub), false)), Some(std::time::Duration::from_secs(10)));
        let opts = Options { jobs: 1, timing_cores: 1, op_budget_s: None };
        assert_eq!(crate::campaign_estimate::left(&[], &costs, opts), "nothing left");
        let mut left: Vec<Task> = v.tasks(Some(&sub), false);
        left.extend(b.tasks(Some(&sub), false));
        assert_eq!(
            crate::campaign_estimate::left(&left, &costs, opts),
            "about 30 s left, plus the first bench step(s)"
        );
        // Three verifies of 10 s on three workers: 10 s of wall time, not 30.
        let three = Options { jobs: 3, timing_cores: 1, op_budget_s: None };
        assert_eq!(crate::campaign_estimate::left(&left[..3], &costs, three), "about 10 s left");
        // Bench learnt at 5 s per operation: 9 operations on the one timing slot, 45 s,
        // more than the verifies over three workers.
        costs.learn(Kind::Bench, 3.0, 15.0);
        assert_eq!(crate::campaign_estimate::left(&left, &costs, three), "about 45 s left");
    }
}
