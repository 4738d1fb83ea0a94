//! `cargo xtask compare A B`: the same operations in two evidence sets (or two systems
//! of one set), as ratios with both spreads and whether each difference is within
//! noise. Figures are comparable only when they differ in nothing but the machine:
//! another compiler, image, library, CPU model, counter or an emulated run is refused
//! loudly (exit 1), and when the user overrides, the differences stand on the page
//! beside the numbers.
//!
//! Images are compared by what defines them, not by the engine's image ID (which
//! changes with every import of the same root filesystem): by the digest of their
//! installed packages and versions when both records carry it, else by the root
//! filesystem's SHA-256, else by the image ID, and the page says which.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{Context, Result};
use camino::Utf8PathBuf;
use xshell::Shell;

use crate::compile::submission::Submission;
use crate::evidence::schema::{
    self, ComparedRow, ComparedSide, Comparison, CounterKind, Credibility, Difference, ImageBasis, ImageBasisCount,
    Record, Significance, ToolchainRecord, TrialSpread,
};
use crate::measure::stats;
use crate::pages::chart::text_width;
use crate::pages::esc;
use crate::pages::md;
use crate::pages::site;
use crate::{project, ui};

/// `compare`: the same operations in two evidence sets or systems.
#[derive(Debug, Clone)]
pub struct Compare {
    pub a: camino::Utf8PathBuf,
    pub b: camino::Utf8PathBuf,
    pub allow_differences: bool,
    pub out: Option<camino::Utf8PathBuf>,
}

/// One side: an evidence root and one of its systems.
#[derive(Debug, Clone)]
pub struct Side {
    pub root: Utf8PathBuf,
    pub system: String,
}

type Key = (String, String, String);
type Records = BTreeMap<Key, Record>;

impl Side {
    /// `DIR` (with one system in it) or `DIR:SYSTEM`. A folder that is not there, or
    /// a system it does not hold, is a usage error (exit 2).
    pub fn parse(arg: &str) -> Result<Side> {
        let (dir, system) = match arg.rsplit_once(':') {
            Some((d, s)) if !s.contains('/') && !s.is_empty() => (d, Some(s.to_owned())),
            _ => (arg, None),
        };
        let root = Utf8PathBuf::from(dir);
        if !root.is_dir() {
            return ui::usage(format!("no evidence directory {root}"));
        }
        crate::evidence::refuse_unindexed(&root)?;
        let mut systems: Vec<String> = root
            .read_dir_utf8()
            .with_context(|| format!("cannot read evidence set {root}"))?
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && e.path().join("records").is_dir())
            .map(|e| e.file_name().to_owned())
            .collect();
        systems.sort();
        match system {
            Some(s) if systems.contains(&s) => Ok(Side { root, system: s }),
            _ if systems.is_empty() => {
                ui::usage(format!("{root} holds no timing records (no <system>/records folder)"))
            }
            Some(s) => {
                ui::usage(format!("{root} has no timing records for system {s} (it has: {})", systems.join(", ")))
            }
            None if systems.len() == 1 => Ok(Side { root, system: systems[0].clone() }),
            None => ui::usage(format!("{root} holds systems {}: name one as {root}:SYSTEM", systems.join(", "))),
        }
    }

    fn label(&self) -> String {
        format!("{}:{}", self.root.file_name().unwrap_or(self.root.as_str()), self.system)
    }

    fn described(&self) -> ComparedSide {
        ComparedSide { label: self.label(), root: self.root.to_string(), system: self.system.clone() }
    }

    /// Every timing record, keyed by (id, instance, operation).
    fn records(&self) -> Result<Records> {
        let dir = self.root.join(&self.system).join("records");
        let mut out = BTreeMap::new();
        for id in dir.read_dir_utf8().with_context(|| format!("cannot read {dir}"))?.filter_map(Result::ok) {
            if !id.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            for f in id.path().read_dir_utf8()?.filter_map(Result::ok) {
                if !f.file_name().contains("__") {
                    continue;
                }
                if let Some(r) = schema::read::<Record>(f.path())? {
                    out.insert((r.id.clone(), r.label.clone(), r.op.name().to_owned()), r);
                }
            }
        }
        Ok(out)
    }
}

// ---- What differs, for people

/// A value as a message shows it: `not recorded` when absent or empty, control
/// characters visible, at most 100 characters.
fn shown(v: Option<&str>) -> String {
    let v = match v.map(str::trim) {
        None | Some("") => return "not recorded".into(),
        Some(v) => v,
    };
    let mut s: String =
        v.chars().flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] }).collect();
    if s.chars().count() > 100 {
        s = s.chars().take(99).collect::<String>() + "…";
    }
    s
}

/// A digest as a message shows it: its first 12 hex digits.
fn short(v: Option<&str>) -> String {
    match v {
        Some(h) if h.len() > 12 && h.is_char_boundary(12) => format!("{}…", &h[..12]),
        other => shown(other),
    }
}

fn counter(c: CounterKind) -> &'static str {
    match c {
        CounterKind::PerfCycles => "CPU cycles (perf_event)",
        CounterKind::Tsc => "x86 TSC",
        CounterKind::CntvctEl0 => "AArch64 CNTVCT_EL0",
    }
}

fn command(c: Option<&Vec<String>>) -> String {
    c.map_or("no such step".into(), |c| format!("`{}`", shown(Some(&c.join(" ")))))
}

/// The strongest identity of an image both records carry (see the module comment).
pub fn image_basis(a: &ToolchainRecord, b: &ToolchainRecord) -> ImageBasis {
    if a.packages.is_some() && b.packages.is_some() {
        ImageBasis::PackageLock
    } else if a.rootfs_sha256.is_some() && b.rootfs_sha256.is_some() {
        ImageBasis::RootFilesystem
    } else if a.image_id.is_some() || b.image_id.is_some() {
        ImageBasis::ImageId
    } else {
        ImageBasis::NoImage
    }
}

/// Which sides lack the package digest, for the message that falls back.
fn lacking(a: &ToolchainRecord, b: &ToolchainRecord) -> &'static str {
    match (a.packages.is_none(), b.packages.is_none()) {
        (true, true) => "either side",
        (true, false) => "side A",
        _ => "side B",
    }
}

/// The images' difference on `basis`, if any. Equal package lists with different root
/// filesystems are no difference: the rootfs is built with SOURCE_DATE_EPOCH, so the
/// same packages give the same tarball from the same mmdebstrap, and what can change
/// the figures (compiler, libraries, their versions) is in the package list, while the
/// built library itself is compared by its SHA-256. That case is a [`image_note`].
fn image_difference(a: &ToolchainRecord, b: &ToolchainRecord) -> Option<String> {
    match image_basis(a, b) {
        ImageBasis::PackageLock => {
            let (x, y) = (a.packages.as_ref()?, b.packages.as_ref()?);
            (x != y).then(|| {
                format!(
                    "image: package lists differ ({} (A) vs {} (B) packages; sha256 {} vs {})",
                    x.count,
                    y.count,
                    short(Some(&x.sha256)),
                    short(Some(&y.sha256))
                )
            })
        }
        ImageBasis::RootFilesystem => (a.rootfs_sha256 != b.rootfs_sha256).then(|| {
            format!(
                "image: root filesystems differ (sha256 {} (A) vs {} (B); compared by root filesystem: no package \
                 list recorded on {})",
                short(a.rootfs_sha256.as_deref()),
                short(b.rootfs_sha256.as_deref()),
                lacking(a, b)
            )
        }),
        ImageBasis::ImageId => (a.image_id != b.image_id).then(|| {
            format!(
                "image: engine image IDs differ ({} (A) vs {} (B); compared by image ID: neither a package list nor \
                 a root filesystem digest is recorded on both sides)",
                short(a.image_id.as_deref()),
                short(b.image_id.as_deref())
            )
        }),
        ImageBasis::NoImage => None,
    }
}

/// What differs in the images without stopping the comparison.
fn image_note(a: &ToolchainRecord, b: &ToolchainRecord) -> Option<String> {
    let differ = a.rootfs_sha256.is_some() && b.rootfs_sha256.is_some() && a.rootfs_sha256 != b.rootfs_sha256;
    (image_basis(a, b) == ImageBasis::PackageLock && differ).then(|| {
        format!(
            "root filesystems differ byte for byte (sha256 {} (A) vs {} (B)) although the package lists match: \
             compared, since the packages and the library digests decide the figures",
            short(a.rootfs_sha256.as_deref()),
            short(b.rootfs_sha256.as_deref())
        )
    })
}

fn check(what: &str, x: String, y: String) -> Option<(String, String)> {
    (x != y).then(|| (what.to_owned(), format!("{what}: {x} (A) vs {y} (B)")))
}

/// The first build step that differs.
fn build_difference(ca: &[Vec<String>], cb: &[Vec<String>]) -> Option<(String, String)> {
    let i = (0..ca.len().max(cb.len())).find(|&i| ca.get(i) != cb.get(i))?;
    let text = format!("build commands: step {} is {} (A) vs {} (B)", i + 1, command(ca.get(i)), command(cb.get(i)));
    Some(("build commands".into(), text))
}

/// What makes two records of the same operation incomparable, as (what, sentence):
/// `counter: x86 TSC (A) vs AArch64 CNTVCT_EL0 (B)`.
pub fn differences(a: &Record, b: &Record) -> Vec<(String, String)> {
    let (ta, tb) = (&a.toolchain, &b.toolchain);
    let emulation = |e: bool| if e { "emulated" } else { "native" }.to_owned();
    [
        check("compiler", shown(Some(&ta.gcc_version)), shown(Some(&tb.gcc_version))),
        check("build tool", shown(Some(&ta.cmake_version)), shown(Some(&tb.cmake_version))),
        check("architecture", ta.arch.uname().into(), tb.arch.uname().into()),
        image_difference(ta, tb).map(|text| ("image".to_owned(), text)),
        build_difference(&a.commands.build, &b.commands.build),
        check("library sha256", short(Some(&a.library_sha256)), short(Some(&b.library_sha256))),
        check("CPU model", shown(Some(&a.environment.processor)), shown(Some(&b.environment.processor))),
        check("counter", counter(a.counter.name).into(), counter(b.counter.name).into()),
        check("emulation", emulation(a.emulated), emulation(b.emulated)),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Records whose figures the host found far below its own reading are never compared,
/// whatever the flags.
fn refuse_not_credible(common: &[Key], (ra, rb): (&Records, &Records)) -> Result<()> {
    let bad: Vec<String> = common
        .iter()
        .flat_map(|k| [&ra[k], &rb[k]])
        .filter(|r| r.host_check.credibility == Credibility::NotCredible)
        .map(|r| {
            format!(
                "  - {} {} {} ({}): {}",
                shown(Some(&r.id)),
                shown(Some(&r.label)),
                shown(Some(r.op.name())),
                shown(Some(&r.system)),
                shown(r.host_check.detail.as_deref())
            )
        })
        .collect();
    if !bad.is_empty() {
        let msg = format!(
            "refusing to compare: timing records marked not credible by the host's CPU check:\n{}",
            bad.join("\n")
        );
        return Err(ui::Findings(msg).into());
    }
    Ok(())
}

// ---- Row order

/// `submissions/<id>.toml` of this checkout, when `id` can name one.
fn manifest(id: &str) -> Option<Submission> {
    project::plain_name(id).ok()?;
    let path = Submission::dir().join(format!("{id}.toml"));
    path.is_file().then(|| Submission::load(path.as_str()).ok()).flatten()
}

/// The keys in the manifest's instance and operation order (never text order: 512
/// before 1024); for a submission this checkout has no manifest of, in the order side
/// A's records were made (their start time). Also says which, per submission.
fn ordered(common: &[Key], ra: &Records) -> (Vec<Key>, String) {
    let mut ids: Vec<&String> = common.iter().map(|k| &k.0).collect();
    ids.dedup();
    let mut position: BTreeMap<&Key, (usize, usize, String)> = BTreeMap::new();
    let mut said = Vec::new();
    for id in ids {
        let keys: Vec<&Key> = common.iter().filter(|k| &k.0 == id).collect();
        match manifest(id) {
            Some(sub) => {
                let ops = sub.family().map(|f| f.all_ops()).unwrap_or_default();
                let at = |l: &str| sub.instances.iter().position(|i| i.label == l).unwrap_or(usize::MAX);
                let op_at = |o: &str| ops.iter().position(|x| x.name() == o).unwrap_or(usize::MAX);
                for k in keys {
                    position.insert(k, (at(&k.1), op_at(&k.2), String::new()));
                }
                said.push(format!("{} in its manifest's order (submissions/{}.toml)", md(id), md(id)));
            }
            None => {
                for k in keys {
                    position.insert(k, (0, 0, ra[k].started.clone()));
                }
                said.push(format!(
                    "{} in the order side A's records were made (this checkout has no manifest of it)",
                    md(id)
                ));
            }
        }
    }
    let mut keys = common.to_vec();
    keys.sort_by(|x, y| (&x.0, &position[x], x).cmp(&(&y.0, &position[y], y)));
    (keys, format!("Rows: {}.", said.join("; ")))
}

// ---- Rows and noise

const ALPHA: f64 = 0.05;

const NOISE_RULE: &str = "Within noise: a two-sided Mann–Whitney rank test on the kept trials' time per \
    operation (exact, over every split of the pooled trials; ties share their rank), at p < 0.05. \
    `significant`: the trials of A and B are separated beyond what chance orders them (with 5 trials a side: \
    at most 2 of the 25 (A, B) trial pairs out of order); `within noise`: they interleave too much to tell; \
    `too few trials`: no ordering of that many trials can reach 0.05 (3 trials a side give 0.1 at best), so \
    no verdict either way. Significant says separated, not large: read it with the ratio.";

/// Kept trials' time per operation, and their spread.
fn kept(r: &Record) -> (Vec<f64>, TrialSpread) {
    let v: Vec<f64> = r.trials.iter().filter(|t| !t.trial.replaced).map(|t| t.trial.ns_per_op()).collect();
    let mut sorted = v.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]),
    };
    let spread = TrialSpread {
        trials: n,
        mean_ns: r.aggregate.mean_ns,
        median_ns: median,
        min_ns: sorted.first().copied().unwrap_or(f64::NAN),
        max_ns: sorted.last().copied().unwrap_or(f64::NAN),
        indicative: stats::indicative(r),
    };
    (v, spread)
}

/// The row of one key; None when a side has no usable trial (no positive, finite time).
fn row(k: &Key, x: &Record, y: &Record) -> Option<ComparedRow> {
    let ((va, a), (vb, b)) = (kept(x), kept(y));
    let usable =
        |s: &TrialSpread| [s.mean_ns, s.median_ns, s.min_ns, s.max_ns].iter().all(|v| v.is_finite() && *v > 0.0);
    if !usable(&a) || !usable(&b) {
        return None;
    }
    let p_value = stats::mann_whitney_p(&va, &vb);
    let significance = if stats::smallest_p(va.len(), vb.len()) >= ALPHA {
        Significance::TooFewTrials
    } else if p_value < ALPHA {
        Significance::Significant
    } else {
        Significance::NotSignificant
    };
    Some(ComparedRow {
        id: k.0.clone(),
        instance: k.1.clone(),
        op: k.2.clone(),
        ratio: b.mean_ns / a.mean_ns,
        ratio_low: b.min_ns / a.max_ns,
        ratio_high: b.max_ns / a.min_ns,
        a,
        b,
        p_value,
        significance,
    })
}

/// How one side's records were timed, counted over the operations compared.
#[derive(Default)]
struct Runs {
    quick: usize,
    unfixed: usize,
    /// The host gate's failed checks, by name, over every record.
    failed: Vec<String>,
}

impl Runs {
    fn of<'a>(records: impl Iterator<Item = &'a Record>) -> Runs {
        let mut runs = Runs::default();
        for r in records {
            runs.quick += usize::from(r.quick);
            let failed = r.host_gate.failed();
            runs.unfixed += usize::from(!failed.is_empty());
            runs.failed.extend(failed.iter().map(|c| c.name.clone()));
        }
        runs.failed.sort();
        runs.failed.dedup();
        runs
    }
}

/// Which sides a property holds for, as the subject of a sentence; None for neither.
fn sides(a: usize, b: usize, all: usize) -> Option<String> {
    let part = |n: usize| if n == all { String::new() } else { format!(" ({n} of {all} operations)") };
    match (a, b) {
        (0, 0) => None,
        (a, 0) => Some(format!("side A{}", part(a))),
        (0, b) => Some(format!("side B{}", part(b))),
        (a, b) if a == all && b == all => Some("both sides".into()),
        (a, b) => Some(format!("side A{} and side B{}", part(a), part(b))),
    }
}

/// What the runs behind the figures were, said once above the table (each row's note
/// stays short): quick runs, whose few trials no rank test can separate, and unfixed
/// hosts, whose figures move between runs of the same code.
fn caveats(common: &[Key], (ra, rb): (&Records, &Records), rows: &[ComparedRow]) -> Vec<String> {
    let (a, b) = (Runs::of(common.iter().map(|k| &ra[k])), Runs::of(common.iter().map(|k| &rb[k])));
    let all = common.len();
    let mut out = Vec::new();
    if let Some(who) = sides(a.quick, b.quick, all) {
        let few = rows.iter().filter(|r| r.significance == Significance::TooFewTrials).count();
        let spec = stats::PlanSpec::quick();
        let mut text = format!(
            "Quick runs: {who} timed with `bench --quick` ({} trials of about {} ms each, for CI), not the \
             reference plan.",
            spec.trials,
            spec.trial_target_s * 1000.0
        );
        if few > 0 {
            let _ = write!(
                text,
                " With that few trials no ordering of them reaches p < 0.05, so {few} of {} rows say `too few \
                 trials`: no verdict either way, not \"no difference\".",
                rows.len()
            );
        }
        out.push(text);
    }
    if let Some(who) = sides(a.unfixed, b.unfixed, all) {
        let mut failed = a.failed;
        failed.extend(b.failed);
        failed.sort();
        failed.dedup();
        out.push(format!(
            "Unfixed hosts: {who} timed with `--allow-unfixed-host` although bench's host gate failed ({}): \
             frequency scaling, turbo and other load move such figures, by 2× or more between two runs of the same \
             code. Read the ratios as indications; for a verdict, time both sides on fixed hosts without `--quick`.",
            failed.iter().map(|f| md(&shown(Some(f)))).collect::<Vec<_>>().join(", ")
        ));
    }
    out
}

fn verdict(r: &ComparedRow) -> String {
    match r.significance {
        Significance::Significant => format!("significant (p = {:.3})", r.p_value),
        Significance::NotSignificant => format!("within noise (p = {:.2})", r.p_value),
        Significance::TooFewTrials => format!("too few trials ({} and {})", r.a.trials, r.b.trials),
    }
}

/// Beside a row's figures: which side's are indicative only, and why; – for neither.
fn indicative(r: &ComparedRow) -> String {
    match (r.a.indicative.join(", "), r.b.indicative.join(", ")) {
        (a, b) if a.is_empty() && b.is_empty() => "–".into(),
        (a, b) if a == b => format!("A and B: {a}"),
        (a, b) if b.is_empty() => format!("A: {a}"),
        (a, b) if a.is_empty() => format!("B: {b}"),
        (a, b) => format!("A: {a}; B: {b}"),
    }
}

// ---- The comparison

/// Everything `compare` finds, before any page is drawn.
fn compare(sides: (&Side, &Side), records: (&Records, &Records), common: &[Key], allow: bool) -> Comparison {
    let (ra, rb) = records;
    let mut found: Vec<Difference> = Vec::new();
    let mut notes: BTreeMap<String, usize> = BTreeMap::new();
    let mut basis: BTreeMap<ImageBasis, usize> = BTreeMap::new();
    for k in common {
        let (x, y) = (&ra[k], &rb[k]);
        let op = format!("{} {} {}", k.0, k.1, k.2);
        for (what, text) in differences(x, y) {
            match found.iter_mut().find(|d| d.text == text) {
                Some(d) => d.operations.push(op.clone()),
                None => found.push(Difference { what, text, operations: vec![op.clone()] }),
            }
        }
        if let Some(n) = image_note(&x.toolchain, &y.toolchain) {
            *notes.entry(n).or_default() += 1;
        }
        *basis.entry(image_basis(&x.toolchain, &y.toolchain)).or_default() += 1;
    }
    let compared = found.is_empty() || allow;
    let (keys, order) = ordered(common, ra);
    let mut rows = Vec::new();
    for k in keys.iter().filter(|_| compared) {
        match row(k, &ra[k], &rb[k]) {
            Some(r) => rows.push(r),
            None => *notes.entry("no usable trial on one side: not compared".into()).or_default() += 1,
        }
    }
    let caveats = if compared { caveats(common, records, &rows) } else { Vec::new() };
    Comparison {
        a: sides.0.described(),
        b: sides.1.described(),
        compared,
        allow_differences: allow,
        image_basis: basis.into_iter().map(|(basis, operations)| ImageBasisCount { basis, operations }).collect(),
        differences: found,
        notes: notes.into_iter().map(|(n, c)| format!("{n} ({c} operations)")).collect(),
        caveats,
        order,
        noise_rule: NOISE_RULE.into(),
        rows,
    }
}

/// One line per kind of difference: its sentence when every operation shares it, else
/// how many pairs of values and one of them (a library digest differs per instance).
fn summaries(c: &Comparison) -> Vec<String> {
    let mut kinds: Vec<&str> = Vec::new();
    for d in &c.differences {
        if !kinds.contains(&d.what.as_str()) {
            kinds.push(&d.what);
        }
    }
    kinds
        .into_iter()
        .map(|what| {
            let all: Vec<&Difference> = c.differences.iter().filter(|d| d.what == what).collect();
            let ops: usize = all.iter().map(|d| d.operations.len()).sum();
            match all.as_slice() {
                [one] => format!("{} ({ops} operations)", one.text),
                [first, ..] => format!(
                    "{what}: {} pairs of values over {ops} operations, such as{} for {}",
                    all.len(),
                    first.text.strip_prefix(what).and_then(|t| t.strip_prefix(':')).unwrap_or(&first.text),
                    first.operations[0]
                ),
                [] => String::new(),
            }
        })
        .collect()
}

fn refusal(c: &Comparison) -> String {
    let list: Vec<String> = summaries(c).iter().map(|d| format!("  - {d}")).collect();
    format!(
        "refusing to compare {} with {}: the figures differ in more than the machine:\n{}\n\
         Pass --allow-differences to compare anyway (the differences are then printed on the page).",
        c.a.label,
        c.b.label,
        list.join("\n")
    )
}

/// `--out` names a folder (or nothing yet) outside both evidence sets: a page inside
/// one would break its `evidence check`.
fn check_out(out: &camino::Utf8Path, sides: [&Side; 2]) -> Result<()> {
    if out.exists() && !out.is_dir() {
        return ui::usage(format!("--out {out} is a file, not a folder"));
    }
    let resolved = project::resolved(out);
    for side in sides {
        if resolved.starts_with(project::resolved(&side.root)) {
            return ui::usage(format!(
                "--out {out} is inside the evidence set {}: write the page elsewhere",
                side.root
            ));
        }
    }
    Ok(())
}

impl Compare {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        // A missing folder is named before either set is read.
        for side in [&self.a, &self.b] {
            let dir = side.as_str().rsplit_once(':').filter(|(_, s)| !s.contains('/')).map_or(side.as_str(), |d| d.0);
            if !Utf8PathBuf::from(dir).is_dir() {
                return ui::usage(format!("no evidence directory {dir}"));
            }
        }
        let (a, b) = (Side::parse(self.a.as_str())?, Side::parse(self.b.as_str())?);
        if let Some(out) = &self.out {
            check_out(out, [&a, &b])?;
        }
        let (ra, rb) = (a.records()?, b.records()?);
        let common: Vec<Key> = ra.keys().filter(|k| rb.contains_key(*k)).cloned().collect();
        if common.is_empty() {
            let msg = format!("{} and {} have no (submission, instance, operation) in common", a.label(), b.label());
            return Err(ui::Findings(msg).into());
        }
        refuse_not_credible(&common, (&ra, &rb))?;
        let c = compare((&a, &b), (&ra, &rb), &common, self.allow_differences);
        if !c.compared {
            ui::emit(&c)?;
            return Err(ui::Findings(refusal(&c)).into());
        }
        let page = page(&c, common.iter().any(|k| ra[k].emulated || rb[k].emulated));
        crate::say!("{}", page.trim_end());
        if let Some(out) = &self.out {
            std::fs::create_dir_all(out).with_context(|| format!("cannot create {out}"))?;
            project::write_atomic(&out.join("compare.md"), page.as_bytes())?;
            project::write_atomic(&out.join("compare.html"), html(&c, &page).as_bytes())?;
            crate::say!("comparison written to {out}/compare.md and compare.html");
        }
        ui::emit(&c)
    }
}

// ---- The page

fn basis_words(b: ImageBasis) -> &'static str {
    match b {
        ImageBasis::PackageLock => "their installed packages and versions (package lock digest)",
        ImageBasis::RootFilesystem => "their root filesystem digest (no package lock recorded)",
        ImageBasis::ImageId => "the engine's image ID (neither package lock nor root filesystem recorded)",
        ImageBasis::NoImage => "nothing: neither side ran in an image",
    }
}

fn page(c: &Comparison, emulated: bool) -> String {
    let mut p = format!("# Comparison: {} (A) and {} (B)\n\n", md(&c.a.label), md(&c.b.label));
    if !c.differences.is_empty() {
        p.push_str("WARNING: compared with --allow-differences: these figures differ in more than the machine.\n\n");
        for d in summaries(c) {
            let _ = writeln!(p, "- {}", md(&d));
        }
        p.push('\n');
    }
    for b in &c.image_basis {
        let _ = writeln!(p, "- images compared by {} ({} operations)", basis_words(b.basis), b.operations);
    }
    for n in &c.notes {
        let _ = writeln!(p, "- note: {}", md(n));
    }
    for caveat in &c.caveats {
        let _ = writeln!(p, "\n{caveat}");
    }
    p.push_str(
        "\n| submission | instance | operation | A mean time | B mean time | B / A | noise | A spread | B spread | \
         indicative |\n",
    );
    p.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for r in &c.rows {
        let spread = |s: &TrialSpread| format!("{:.3}–{:.3}", s.min_ns / s.median_ns, s.max_ns / s.median_ns);
        let _ = writeln!(
            p,
            "| {} | {} | {} | {} | {} | {:.3} | {} | {} | {} | {} |",
            md(&r.id),
            md(&r.instance),
            md(&r.op),
            stats::human_time(r.a.mean_ns),
            stats::human_time(r.b.mean_ns),
            r.ratio,
            verdict(r),
            spread(&r.a),
            spread(&r.b),
            md(&indicative(r))
        );
    }
    if emulated {
        p.push_str("\nOne side ran under emulation: its times are not measurements of that architecture.\n");
    }
    p.push_str("\nSpread: fastest and slowest kept trial over the median trial of the same record.\n\n");
    if c.rows.iter().any(|r| !r.a.indicative.is_empty() || !r.b.indicative.is_empty()) {
        let _ = writeln!(p, "{}\n", stats::indicative_rule());
    }
    let _ = writeln!(p, "{}\n\n{}", c.noise_rule, c.order);
    p
}

/// The page as HTML, then the ratio chart drawn from its table.
fn html(c: &Comparison, page: &str) -> String {
    let mut h = site::head(&format!("Comparison: {} (A) and {} (B)", c.a.label, c.b.label));
    h.push_str(&site::markdown_to_html(page, ""));
    let _ = write!(
        h,
        "<figure>\n{}<figcaption>B / A per operation: the dot is the ratio of mean times (filled: significant, \
         hollow: within noise or too few trials), the line its range over the trials (B's fastest over A's \
         slowest to B's slowest over A's fastest). From the table above.</figcaption>\n</figure>\n",
        ratio_chart(&c.rows)
    );
    h.push_str("</body>\n</html>\n");
    h
}

// ---- The ratio chart: one line per row, so labels never overlap

const ROW_H: f64 = 22.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 56.0;
const PLOT_W: f64 = 440.0;
/// The labels' font size, px.
const FONT: f64 = 12.0;
/// Labels longer than this many characters (only hostile evidence has them) are cut.
const LABEL_CHARS: usize = 80;

/// At most `n` characters, the cut marked with `…`.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

/// A log axis that holds 1 and every range, widened by 10 % on each side: a ratio
/// axis that cannot reach 0 or below.
fn domain(rows: &[ComparedRow]) -> (f64, f64) {
    let lo = rows.iter().map(|r| r.ratio_low).fold(1.0, f64::min) / 1.1;
    let hi = rows.iter().map(|r| r.ratio_high).fold(1.0, f64::max) * 1.1;
    (lo, hi)
}

/// Tick values in `[lo, hi]`: the finest of the 1-2-5 style series that gives at most 7.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let series: [&[f64]; 4] = [
        &[1.0],
        &[1.0, 2.0, 5.0],
        &[1.0, 1.5, 2.0, 3.0, 5.0, 7.0],
        &[1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0],
    ];
    let (k0, k1) = (lo.log10().floor() as i32 - 1, hi.log10().ceil() as i32);
    let within = |s: &[f64]| -> Vec<f64> {
        (k0..=k1).flat_map(|k| s.iter().map(move |m| m * 10f64.powi(k))).filter(|v| (lo..=hi).contains(v)).collect()
    };
    let mut best = within(series[0]);
    for s in series {
        let t = within(s);
        if t.len() <= 7 {
            best = t;
        }
    }
    best
}

enum Line<'a> {
    Submission(&'a str),
    Row(&'a ComparedRow),
}

pub fn ratio_chart(rows: &[ComparedRow]) -> String {
    let mut lines = Vec::new();
    for r in rows {
        if !matches!(lines.last(), Some(Line::Row(p)) if p.id == r.id) {
            lines.push(Line::Submission(&r.id));
        }
        lines.push(Line::Row(r));
    }
    // Both text areas are as wide as their longest text: nothing is cut.
    let widest = |texts: &mut dyn Iterator<Item = String>| texts.map(|t| text_width(&t, FONT)).fold(0.0, f64::max);
    let left = (widest(&mut rows.iter().map(row_label)) + 16.0).max(60.0);
    let values = widest(&mut rows.iter().map(value_label)) + 20.0;
    let titles = widest(&mut rows.iter().map(|r| cut(&r.id, LABEL_CHARS))) * 1.1 + 8.0;
    let (lo, hi) = domain(rows);
    let x = |v: f64| left + (v.ln() - lo.ln()) / (hi.ln() - lo.ln()) * PLOT_W;
    let bottom = TOP + lines.len() as f64 * ROW_H;
    let (width, height) = ((left + PLOT_W + values).max(titles), bottom + BOTTOM);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" \
         height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"B over A \
         per operation\">\n"
    );
    for t in ticks(lo, hi) {
        let (tx, stroke) = (x(t), if t == 1.0 { "#555" } else { "#ddd" });
        let _ = writeln!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{TOP}\" x2=\"{tx:.1}\" y2=\"{bottom}\" stroke=\"{stroke}\"/>\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            bottom + 16.0,
            stats::three_digits(t)
        );
    }
    for (i, line) in lines.iter().enumerate() {
        let y = TOP + i as f64 * ROW_H + ROW_H / 2.0;
        match line {
            Line::Submission(id) => {
                let _ = writeln!(
                    s,
                    "<text x=\"4\" y=\"{:.1}\" font-weight=\"bold\">{}</text>",
                    y + 4.0,
                    esc(&cut(id, LABEL_CHARS))
                );
            }
            Line::Row(r) => s.push_str(&chart_row(r, y, left, &x)),
        }
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">B / A: B's mean time per operation over A's (no unit, \
         log scale; below 1: B faster)</text>\n</svg>",
        left + PLOT_W / 2.0,
        bottom + 38.0
    );
    s
}

/// A row's label on the chart: instance and operation.
fn row_label(r: &ComparedRow) -> String {
    cut(&format!("{} {}", r.instance, r.op), LABEL_CHARS)
}

/// The text right of a row: ratio and verdict.
fn value_label(r: &ComparedRow) -> String {
    let mark = if r.a.indicative.is_empty() && r.b.indicative.is_empty() { "" } else { " · indicative" };
    format!("{:.3} · {}{mark}", r.ratio, cut(&verdict(r), LABEL_CHARS))
}

fn chart_row(r: &ComparedRow, y: f64, left: f64, x: &dyn Fn(f64) -> f64) -> String {
    let fill = if r.significance == Significance::Significant { "#1f5fa8" } else { "#fff" };
    format!(
        "<g><title>{} {} {}: B / A {:.3}, {}</title>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
         <line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#1f5fa8\" stroke-width=\"2\"/>\
         <circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4.5\" fill=\"{fill}\" stroke=\"#1f5fa8\" stroke-width=\"1.5\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>\n",
        esc(&r.id),
        esc(&r.instance),
        esc(&r.op),
        r.ratio,
        esc(&verdict(r)),
        left - 8.0,
        y + 4.0,
        esc(&row_label(r)),
        x(r.ratio_low),
        x(r.ratio_high),
        x(r.ratio),
        left + PLOT_W + 10.0,
        y + 4.0,
        esc(&value_label(r)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::schema::PackageDigest;

    fn golden() -> Record {
        schema::read(&crate::project::root().join("xtask/tests/golden/record.json")).unwrap().unwrap()
    }

    #[test]
    fn every_difference_but_the_machine_is_named_for_people() {
        let a = golden();
        assert!(differences(&a, &a.clone()).is_empty(), "the same record is comparable with itself");
        let mut b = a.clone();
        b.environment.machine = "another machine".into();
        assert!(differences(&a, &b).is_empty(), "another machine is the point of comparing");
        b.toolchain.gcc_version = "gcc 15".into();
        b.library_sha256 = "0".repeat(64);
        b.emulated = true;
        b.counter.name = CounterKind::CntvctEl0;
        let d: Vec<String> = differences(&a, &b).into_iter().map(|d| d.1).collect();
        assert_eq!(d.len(), 4, "{d:?}");
        assert_eq!(d[0], "compiler: gcc (Debian 14.2.0-19) 14.2.0 (A) vs gcc 15 (B)");
        assert!(d.contains(&"emulation: native (A) vs emulated (B)".to_owned()), "{d:?}");
        assert!(d.iter().any(|x| x.starts_with("library sha256: ") && x.ends_with(" vs 000000000000… (B)")), "{d:?}");
        assert!(d.iter().any(|x| x.starts_with("counter: ") && x.ends_with(" vs AArch64 CNTVCT_EL0 (B)")), "{d:?}");
        for x in &d {
            assert!(!x.contains("Some(") && !x.contains("None") && !x.contains("CntvctEl0"), "{x}");
        }
    }

    #[test]
    fn images_are_the_same_when_their_package_lists_are() {
        let mut a = golden().toolchain;
        a.packages = Some(PackageDigest { count: 412, sha256: "1a2b".repeat(16) });
        let mut b = a.clone();
        b.image_id = Some("3db49962".repeat(8));
        b.rootfs_sha256 = Some("9".repeat(64));
        a.rootfs_sha256 = Some("8".repeat(64));
        assert_eq!(image_basis(&a, &b), ImageBasis::PackageLock);
        assert_eq!(image_difference(&a, &b), None, "another engine ID, the same packages");
        assert!(image_note(&a, &b).unwrap().contains("root filesystems differ byte for byte"));
        b.packages = Some(PackageDigest { count: 415, sha256: "3c4d".repeat(16) });
        assert_eq!(
            image_difference(&a, &b).unwrap(),
            "image: package lists differ (412 (A) vs 415 (B) packages; sha256 1a2b1a2b1a2b… vs 3c4d3c4d3c4d…)"
        );
        // Older records: the root filesystem, then the image ID, and the message says which.
        b.packages = None;
        assert!(image_difference(&a, &b)
            .unwrap()
            .contains("compared by root filesystem: no package list recorded on side B"));
        b.rootfs_sha256 = None;
        let e = image_difference(&a, &b).unwrap();
        assert!(
            e.starts_with(
                "image: engine image IDs differ (f7f8727e8f66… (A) vs 3db499623db4… (B); compared by image ID"
            ),
            "{e}"
        );
        b.image_id = None;
        assert!(image_difference(&a, &b).unwrap().contains("vs not recorded (B)"));
    }

    #[test]
    fn the_package_digest_is_the_sha256_of_name_version_lines() {
        let lock: schema::ImageLock =
            schema::read(&crate::project::root().join("xtask/tests/golden/image_lock.json")).unwrap().unwrap();
        let d = lock.package_digest();
        assert_eq!(d.count, lock.packages.len());
        let mut text = String::new();
        for (name, version) in &lock.packages {
            text.push_str(&format!("{name} {version}\n"));
        }
        assert!(text.starts_with("apt 3.0.4\nbase-files 13.8+deb13u8\n"));
        assert_eq!(d.sha256, crate::project::sha256_hex(text.as_bytes()));
        let mut other = lock.clone();
        other.packages.insert("bash".into(), "5.2.37-3".into());
        assert_ne!(other.package_digest(), d, "one version more or less is another image");
        assert_eq!(golden().toolchain.packages, None, "older records read back without it");
    }

    #[test]
    fn records_the_host_found_not_credible_are_never_compared() {
        let a = golden();
        let key: Key = (a.id.clone(), a.label.clone(), a.op.name().to_owned());
        let mut b = a.clone();
        let ra = BTreeMap::from([(key.clone(), a)]);
        assert!(
            refuse_not_credible(std::slice::from_ref(&key), (&ra, &BTreeMap::from([(key.clone(), b.clone())]))).is_ok()
        );
        b.host_check.credibility = Credibility::NotCredible;
        let rb = BTreeMap::from([(key.clone(), b)]);
        let e = refuse_not_credible(&[key], (&ra, &rb)).unwrap_err();
        assert_eq!(ui::exit_code(&e), ui::exit::FINDINGS);
        assert!(e.to_string().contains("not credible") && e.to_string().contains("ML-KEM-512"), "{e}");
    }

    /// Every label and value text is drawn whole, inside the chart: the label area is as
    /// wide as the widest label in the widest font, the value area as its widest text.
    #[test]
    fn chart_labels_are_whole_and_fit_their_areas() {
        let spread = TrialSpread {
            trials: 3,
            mean_ns: 1e5,
            median_ns: 1e5,
            min_ns: 0.9e5,
            max_ns: 1.1e5,
            indicative: vec!["quick run".into(), "3 trials".into()],
        };
        let row = |instance: &str, op: &str, significance| ComparedRow {
            id: "sign-26".into(),
            instance: instance.into(),
            op: op.into(),
            ratio: 1.25,
            ratio_low: 1.0,
            ratio_high: 1.5,
            a: spread.clone(),
            b: spread.clone(),
            p_value: 0.1,
            significance,
        };
        let rows = [
            row("ML-KEM-512", "keygen", Significance::Significant),
            row("SQIsign2D-push2-NIST-V", "sign_msgs", Significance::TooFewTrials),
            row("WWMMWWMMWWMMWWMMWW", "dec", Significance::NotSignificant),
        ];
        let svg = ratio_chart(&rows);
        let width: f64 = svg.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        for r in &rows {
            let label = format!("{} {}", r.instance, r.op);
            let at = svg.find(&format!(">{label}</text>")).unwrap_or_else(|| panic!("{label} whole: {svg}"));
            let x: f64 = svg[..at].rsplit("<text x=\"").next().unwrap().split('"').next().unwrap().parse().unwrap();
            assert!(x - text_width(&label, FONT) >= 4.0, "{label} starts inside the chart: x = {x}");
            let value = value_label(r);
            let at = svg.find(&format!(">{}</text>", esc(&value))).unwrap_or_else(|| panic!("{value} whole: {svg}"));
            let x: f64 = svg[..at].rsplit("<text x=\"").next().unwrap().split('"').next().unwrap().parse().unwrap();
            assert!(x + text_width(&value, FONT) <= width, "{value} ends inside the chart: {x} of {width}");
        }
        assert!(svg.contains(">1.250 · too few trials (3 and 3) · indicative</text>"), "{svg}");
        // Wide letters take more room than a count of characters gave them (7.5 px each).
        assert!(text_width("WWMMWWMMWWMMWWMMWW dec", FONT) > 22.0 * 7.5);
    }

    #[test]
    fn the_ratio_axis_holds_one_and_never_reaches_zero() {
        let (lo, hi) = (0.05, 40.0);
        let t = ticks(lo, hi);
        assert!(t.iter().all(|v| *v > 0.0) && t.contains(&1.0) && t.len() <= 7, "{t:?}");
        let t = ticks(1.0 / 1.1, 1.52 * 1.1);
        assert!(t.contains(&1.0) && t.len() >= 3 && t.iter().all(|v| (1.0 / 1.1..=1.52 * 1.1).contains(v)), "{t:?}");
    }
}
