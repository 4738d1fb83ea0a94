//! `cargo xtask report`: render a submission's evidence as a page with the structure
//! of the seed pages (sections 1–7), from the records alone. Emulated timings are
//! never shown as measurements.

use crate::pages::md;
use std::fmt::Write as _;

use anyhow::{bail, Result};
use xshell::Shell;

use crate::compile::sources::Provenance;
use crate::compile::submission::GroupKind;
use crate::compile::submission::Submission;
use crate::container::systems::SystemProfile;
use crate::evidence::schema::{
    self, ContentControl, ContentVerdict, Credibility, CtRecord, Disagreement, Environment, InstanceResult,
    ProfileRecord, Record, SizeAudit, Summary, Survey,
};
use crate::evidence::{self, Layout};
use crate::family::{Family, SizeName};
use crate::kat::verify::Status;
use crate::pages::forms;
use crate::{measure::stats, project};

/// `report`: a submission's evidence as a page.
#[derive(Debug, Clone)]
pub struct Report {
    pub ids: Vec<String>,
    pub out: camino::Utf8PathBuf,
    pub system: String,
    pub arch: Option<crate::evidence::domain::Arch>,
}

/// The timing records of one submission, in manifest and page order.
pub fn records(layout: &Layout, sub: &Submission) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    for inst in &sub.instances {
        for op in sub.family()?.all_ops() {
            records.extend(schema::read::<Record>(&layout.record(&sub.id, &inst.label, op.name()))?);
        }
    }
    Ok(records)
}

/// The evidence of one submission on one system, read through its types.
pub(crate) struct Evidence {
    pub family: &'static Family,
    pub kat: Option<Summary>,
    pub env: Option<Environment>,
    /// The reference instances' records: every table and chart of the page.
    pub records: Vec<Record>,
    /// The records of the manifest's variant instances (optimized builds), shown only in
    /// a table of their own.
    pub variants: Vec<Record>,
    /// The family's baseline records timed in the same run as `records`.
    pub baselines: Vec<Record>,
    audit: Vec<Disagreement>,
    survey: Option<Survey>,
    profiles: Vec<ProfileRecord>,
    /// Constant-time records, in instance and operation order.
    pub ct: Vec<CtRecord>,
}

impl Evidence {
    pub(crate) fn read(layout: &Layout, sub: &Submission) -> Result<Evidence> {
        let is_variant = |r: &Record| sub.instances.iter().any(|i| i.label == r.label && i.variant.is_some());
        let (variants, records): (Vec<Record>, Vec<Record>) = records(layout, sub)?.into_iter().partition(is_variant);
        let mut profiles = Vec::new();
        for inst in &sub.instances {
            for op in sub.family()?.all_ops() {
                profiles.extend(schema::read::<ProfileRecord>(&layout.profile(&sub.id, &inst.label, op.name()))?);
            }
        }
        let mut ct = Vec::new();
        for inst in &sub.instances {
            for op in sub.family()?.ct.iter().flat_map(|c| c.ops) {
                ct.extend(schema::read::<CtRecord>(&layout.ct(&sub.id, &inst.label, op.id))?);
            }
        }
        let audit_path = layout.size_audit(&sub.id);
        let audit = schema::read::<SizeAudit>(&audit_path)?.map(|a| a.disagreements).unwrap_or_default();
        let baselines = same_run_baselines(layout, sub, &records)?;
        Ok(Evidence {
            baselines,
            family: sub.family()?,
            kat: schema::read(&layout.kat_summary(&sub.id))?,
            env: schema::read(&layout.environment(&sub.id))?,
            records,
            variants,
            audit,
            survey: schema::read(&layout.survey(&sub.id))?,
            profiles,
            ct,
        })
    }
}

/// Records of the family's baseline that share a run with `records` (none for the
/// baseline itself).
fn same_run_baselines(layout: &Layout, sub: &Submission, records: &[Record]) -> Result<Vec<Record>> {
    let Some(id) = sub.family()?.baseline.filter(|b| *b != sub.id) else { return Ok(Vec::new()) };
    let runs: Vec<&str> = records.iter().filter_map(|r| r.run_id.as_deref()).collect();
    let all = self::records(layout, &Submission::load(id)?)?;
    Ok(all.into_iter().filter(|b| b.run_id.as_deref().is_some_and(|r| runs.contains(&r))).collect())
}

impl Report {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        let folder = match self.arch {
            Some(arch) => SystemProfile::load(&self.system)?.evidence_name(arch),
            None => self.system.clone(),
        };
        let layout = Layout::new(&self.out, &folder);
        evidence::refuse_unindexed(&self.out)?;
        for id in &self.ids {
            let sub = Submission::load(id)?;
            let page = render(&layout, &sub)?;
            let path = layout.report(&sub.id);
            project::write_atomic(&path, page.as_bytes())?;
            crate::say!("{path}");
        }
        evidence::update_index(&self.out)?;
        Ok(())
    }
}

pub fn render(layout: &Layout, sub: &Submission) -> Result<String> {
    let e = Evidence::read(layout, sub)?;
    let sanitized = crate::sanitize::records(layout, sub)?;
    if e.kat.is_none() && e.records.is_empty() && e.survey.is_none() && e.ct.is_empty() && sanitized.is_empty() {
        bail!("no evidence for {} under {}: run verify and bench first", sub.id, layout.system_dir);
    }
    let mut p = String::new();
    basic(&mut p, layout, sub, &e)?;
    environment(&mut p, &e)?;
    kat(&mut p, &e)?;
    performance(&mut p, &e)?;
    resources(&mut p, &e)?;
    if e.family.sizes_section {
        sizes(&mut p, &e)?;
    }
    if e.family.symmetric_section {
        symmetric(&mut p, &e)?;
    }
    crate::pages::constant_time::section(&mut p, e.family, &e.ct)?;
    crate::pages::sanitizers::section(&mut p, &sanitized)?;
    crate::pages::library::exported(&mut p, e.kat.as_ref())?;
    index(&mut p, layout, sub)?;
    Ok(p)
}

/// The architecture as the seed pages write it (`x86-64`, `AArch64`).
fn arch(e: &Evidence) -> &'static str {
    let tc = e
        .records
        .first()
        .map(|r| &r.toolchain)
        .or(e.kat.as_ref().map(|k| &k.toolchain))
        .or(e.profiles.first().map(|p| &p.toolchain));
    tc.map_or("unknown", |t| t.arch.display())
}

/// What §5 and §6 say when the set has no timing run (their figures come from it).
pub const NOT_MEASURED: &str = "Not measured: no timing run in this evidence set.";

/// What a page says of an item no evidence and no manifest gives.
pub const NOT_GIVEN: &str = "not given";

fn basic(w: &mut String, layout: &Layout, sub: &Submission, e: &Evidence) -> Result<()> {
    let folder = layout.system_dir.file_name().unwrap_or_default();
    let system = e.records.first().map(|r| r.system.as_str()).or(e.kat.as_ref().map(|k| k.system.as_str()));
    let system = system.unwrap_or(folder);
    let arch = arch(e);
    writeln!(w, "# {} {} — performance on {arch} (system {system})\n", sub.id, sub.name)?;
    writeln!(w, "{}\n", intro(arch))?;
    writeln!(w, "## 1. Basic information\n")?;
    writeln!(w, "- Category: {}; function: {}", e.family.category, e.family.function)?;
    writeln!(w, "- Algorithm: {}", sub.name)?;
    writeln!(w, "- Implementation versions measured: {}", given(sub.implementation.as_deref()))?;
    parameter_sets(w, sub, e)?;
    let method = method(e, system);
    writeln!(
        w,
        "- Measurement method: {}",
        method.map_or(NOT_GIVEN.to_owned(), |m| link(&format!("{system} method"), &m))
    )?;
    writeln!(w, "- Submission: {}", submission_page(sub))?;
    manifest_notes(w, sub)?;
    let first = e.records.first();
    if let Some(src) = first.map(|r| &r.source).or(e.kat.as_ref().map(|k| &k.source)) {
        writeln!(w, "- Source: {}", compact(src))?;
    }
    if let Some(r) = first {
        writeln!(w, "- Harness commit: {}", r.harness_commit)?;
    }
    Ok(())
}

/// The sentence under the title: whose structure the page follows, and whose it is not.
fn intro(arch: &str) -> String {
    let guide = match arch {
        "AArch64" => "NICCS ARM",
        "x86-64" => "NICCS x86",
        _ => "NICCS",
    };
    format!(
        "Independent measurement by ngcc-repro, following the structure of the {guide} self-assessment guide, \
         §3.5 (1)–(7). Not a submitter self-assessment."
    )
}

fn given(item: Option<&str>) -> String {
    item.map_or(NOT_GIVEN.to_owned(), md)
}

/// The parameter sets this evidence has a result for, the security evaluation's link,
/// and the instances only declared.
fn parameter_sets(w: &mut String, sub: &Submission, e: &Evidence) -> Result<()> {
    let measured: Vec<&str> = sub
        .instances
        .iter()
        .map(|i| i.label.as_str())
        .filter(|l| {
            e.kat.as_ref().is_some_and(|k| k.instances.iter().any(|i| i.label == *l))
                || e.records.iter().any(|r| r.label == *l)
                || e.profiles.iter().any(|r| r.label == *l)
        })
        .collect();
    let sets = if measured.is_empty() { "none".into() } else { md(&measured.join(", ")) };
    let evaluation = sub.evaluation.as_deref().map_or(NOT_GIVEN.to_owned(), |u| link(&format!("{} report", sub.id), u));
    writeln!(w, "- Parameter sets: {sets} — security evaluation: {evaluation}")?;
    let declared: Vec<&str> =
        sub.instances.iter().map(|i| i.label.as_str()).filter(|l| !measured.contains(l)).collect();
    if !declared.is_empty() {
        writeln!(w, "- Declared, not measured here: {}", md(&declared.join(", ")))?;
    }
    Ok(())
}

/// The system profile's method page, as the evidence recorded it, else as the
/// checkout's profile of that name says (evidence older than the key).
fn method(e: &Evidence, system: &str) -> Option<String> {
    let recorded = e.kat.as_ref().and_then(|k| k.system_profile.method.clone());
    recorded.or_else(|| SystemProfile::load(system).ok().and_then(|p| p.method))
}

/// Where the submission is published: an archive's page in its manifest; a pinned crate
/// by its name, version and the checksum its lock file pins (no registry address).
fn submission_page(sub: &Submission) -> String {
    match &sub.source {
        crate::compile::submission::SourceSpec::Archive { page: Some(p), .. } => link("NICCS page", p),
        crate::compile::submission::SourceSpec::Crate { name, version, .. } => {
            md(&format!("crate {name} {version} (checksum pinned in sources/Cargo.lock)"))
        }
        _ => NOT_GIVEN.to_owned(),
    }
}

/// A Markdown link for an http(s) address with no character that could end it; any
/// other text is shown literally beside its name.
pub(crate) fn link(text: &str, url: &str) -> String {
    let plain = url.chars().all(|c| c.is_ascii_graphic() && !"()[]<>\\\"'`|".contains(c));
    if plain && (url.starts_with("https://") || url.starts_with("http://")) {
        format!("[{}]({url})", md(text))
    } else {
        format!("{} ({})", md(text), md(url))
    }
}

/// What the manifest says of some instances' shape: XOF output lengths, and those
/// verified but never timed (`timed = false`).
fn manifest_notes(w: &mut String, sub: &Submission) -> Result<()> {
    let xof: Vec<String> = sub
        .instances
        .iter()
        .filter(|i| i.xof)
        .map(|i| format!("{} ({} bits)", i.label, i.digest_bits.unwrap_or_default()))
        .collect();
    if !xof.is_empty() {
        writeln!(
            w,
            "- Extendable-output (XOF) instances, verified and timed at one output length: {}",
            xof.join(", ")
        )?;
    }
    let untimed: Vec<&str> = sub.instances.iter().filter(|i| !i.timed).map(|i| i.label.as_str()).collect();
    if !untimed.is_empty() {
        writeln!(w, "- {}: {}", untimed.join(", "), crate::measure::bench::NOT_TIMED)?;
    }
    Ok(())
}

fn environment(w: &mut String, e: &Evidence) -> Result<()> {
    writeln!(w, "\n## 2. Assessment environment\n")?;
    let Some(env) = e.env.as_ref().or(e.records.first().map(|r| &r.environment)) else {
        writeln!(w, "No timing run: no environment manifest.")?;
        return Ok(());
    };
    writeln!(w, "| item | value |\n|---|---|")?;
    for (k, v) in env.rows() {
        writeln!(w, "| {k} | {} |", md(&v))?;
    }
    if !env.warnings.is_empty() {
        writeln!(w, "\nWarnings: {}", env.warnings.join("; "))?;
    }
    Ok(())
}

fn kat(w: &mut String, e: &Evidence) -> Result<()> {
    writeln!(w, "\n## 3. Functional testing (KAT)\n")?;
    let Some(k) = &e.kat else {
        writeln!(w, "No verify run in this evidence set.")?;
        return Ok(());
    };
    writeln!(w, "KAT digests checked against {}.\n", shown_manifest(&k.kat_manifest, &k.kat_manifest_sha256))?;
    if e.family.kat_parts.len() > 1 {
        return kat_files(w, e, k);
    }
    writeln!(w, "| instance | build flags | KAT |\n|---|---|---|")?;
    let mut others = Vec::new();
    let mut notes = Vec::new();
    for i in &k.instances {
        if another_library(i, &e.records) {
            writeln!(w, "| {} | {} | not shown: another library than the one timed |", md(&i.label), md(&i.flag_set))?;
            others.push(i.label.clone());
        } else {
            writeln!(w, "| {} | {} | {}{} |", md(&i.label), md(&i.flag_set), i.status, verdict_note(i, &mut notes))?;
        }
    }
    for (n, (label, detail)) in notes.iter().enumerate() {
        writeln!(w, "{}[{}] {}: {}", if n == 0 { "\n" } else { "" }, n + 1, md(label), md(detail))?;
    }
    flag_sets(w, k)?;
    if !others.is_empty() {
        writeln!(
            w,
            "\nThe KAT run checked another library (SHA-256) than sections 4–5 timed for {}: its result is \
             not theirs.",
            others.join(", ")
        )?;
    }
    corroborated(w, e.family, k)?;
    tampered(w, e.family, k)
}

/// Families whose program writes several KAT files: one row per file, each with its own
/// status, and a file not checked in the run said so.
fn kat_files(w: &mut String, e: &Evidence, k: &Summary) -> Result<()> {
    writeln!(w, "| instance | KAT file | build flags | KAT | time |\n|---|---|---|---|---|")?;
    let mut notes = Vec::new();
    for i in &k.instances {
        if another_library(i, &e.records) {
            writeln!(
                w,
                "| {} | all | {} | not shown: another library than the one timed | |",
                md(&i.label),
                md(&i.flag_set)
            )?;
            continue;
        }
        let note = verdict_note(i, &mut notes);
        if i.files.is_empty() {
            // Not run as far as its files (a build failure, say).
            writeln!(w, "| {} | all | {} | {}{note} | |", md(&i.label), md(&i.flag_set), i.status)?;
            continue;
        }
        for f in &i.files {
            let status = match (f.status, f.kept) {
                (None, _) => "not checked in this run (--kat-files)".to_owned(),
                (Some(s), true) => format!("{s} (kept from an earlier run of the same build)"),
                (Some(s), false) => s.to_string(),
            };
            let time = f.run_seconds.map_or(String::new(), |t| format!("{t:.1} s"));
            writeln!(w, "| {} | {} | {} | {status}{note} | {time} |", md(&i.label), md(&f.file), md(&i.flag_set))?;
        }
    }
    for (n, (label, detail)) in notes.iter().enumerate() {
        writeln!(w, "{}[{}] {}: {}", if n == 0 { "\n" } else { "" }, n + 1, md(label), md(detail))?;
    }
    let parts: Vec<String> = e.family.kat_parts.iter().map(|p| format!("{}: {}", p.prefix, p.what)).collect();
    writeln!(w, "\nKAT files: {}.", parts.join("; "))?;
    let partial: Vec<&str> = k.instances.iter().filter(|i| i.unchecked_files() > 0).map(|i| i.label.as_str()).collect();
    if !partial.is_empty() {
        writeln!(
            w,
            "\nNot every KAT file was checked for {}: their status covers the checked files only.",
            partial.join(", ")
        )?;
    }
    flag_sets(w, k)
}

/// What each named flag set was, as the records give it (a set other than the guide's
/// is named in its row, never silently).
fn flag_sets(w: &mut String, k: &Summary) -> Result<()> {
    let mut seen: Vec<(&str, &Vec<String>)> = Vec::new();
    for i in &k.instances {
        if !seen.iter().any(|(name, _)| *name == i.flag_set) {
            seen.push((&i.flag_set, &i.flags));
        }
    }
    let sets: Vec<String> =
        seen.iter().map(|(name, flags)| format!("{} = `{}`", md(name), md(&flags.join(" ")))).collect();
    if !sets.is_empty() {
        writeln!(w, "\nBuild flag sets: {}.", sets.join("; "))?;
    }
    Ok(())
}

/// Beside timing, a KAT result stands only for the very library that was timed.
pub(crate) fn another_library(i: &InstanceResult, records: &[Record]) -> bool {
    let timed = records.iter().filter(|r| r.label == i.label);
    timed.into_iter().any(|r| i.library_sha256.as_deref() != Some(r.library_sha256.as_str()))
}

/// A check that stands as a verdict of its own (a verifier accepting invalid
/// signatures) is shown beside the status, with its detail as a numbered note.
fn verdict_note(i: &InstanceResult, notes: &mut Vec<(String, String)>) -> String {
    if let Some(why) = &i.known_issue {
        notes.push((i.label.clone(), format!("known issue, documented in the manifest: {why}")));
        return format!(" [{}]", notes.len());
    }
    match &i.check {
        Some(c) if !c.holds() && i.status == Status::Pass => {
            notes.push((i.label.clone(), c.detail.clone()));
            format!("; {}: {} [{}]", c.check, c.verdict, notes.len())
        }
        _ => String::new(),
    }
}

/// Which PASSes the family's check on run-time inputs corroborates, and which rest on
/// the digest alone.
fn corroborated(w: &mut String, family: &Family, k: &Summary) -> Result<()> {
    let Some(check) = &family.corroboration else { return Ok(()) };
    let passed = k.instances.iter().filter(|i| i.status == Status::Pass);
    let (held, digest_only): (Vec<_>, Vec<_>) = passed.partition(|i| i.check.is_some());
    let held: Vec<_> = held.into_iter().filter(|i| i.check.as_ref().is_some_and(|c| c.holds())).collect();
    let names = |v: &[&InstanceResult]| v.iter().map(|i| i.label.as_str()).collect::<Vec<_>>().join(", ");
    if !held.is_empty() {
        let mut text = check.holds.to_owned();
        text[..1].make_ascii_uppercase();
        writeln!(w, "\n{text}: {}.", names(&held))?;
    }
    if !digest_only.is_empty() {
        writeln!(w, "\nKAT digest only, {}: {}.", check.absent, names(&digest_only))?;
    }
    Ok(())
}

/// The tampered-input check's verdicts: which instances held, and each failure with
/// what failed. Nothing when no instance ran it.
fn tampered(w: &mut String, family: &Family, k: &Summary) -> Result<()> {
    let Some(check) = &family.tampered else { return Ok(()) };
    let ran: Vec<&InstanceResult> = k.instances.iter().filter(|i| i.tampered.is_some()).collect();
    if ran.is_empty() {
        return Ok(());
    }
    let holds = |i: &&InstanceResult| i.tampered.as_ref().is_some_and(|c| c.holds());
    let (held, failed): (Vec<&InstanceResult>, Vec<&InstanceResult>) = ran.into_iter().partition(holds);
    writeln!(
        w,
        "
Tampered inputs, on records drawn at run time (a verdict of its own, beside the KAT status):"
    )?;
    if !held.is_empty() {
        let names: Vec<String> = held.iter().map(|i| md(&i.label)).collect();
        let mut text = check.holds.to_owned();
        text[..1].make_ascii_uppercase();
        writeln!(w, "{text}: {}.", names.join(", "))?;
    }
    for i in failed {
        let c = i.tampered.as_ref().expect("partitioned on it");
        writeln!(w, "\n- {}: **{} {}**: {}", md(&i.label), md(&c.check), c.verdict, md(&c.detail))?;
    }
    Ok(())
}

fn performance(w: &mut String, e: &Evidence) -> Result<()> {
    writeln!(w, "\n## 4. Performance\n")?;
    if e.records.iter().any(|r| r.emulated) {
        writeln!(
            w,
            "Timed under qemu-user emulation: these runs are not measurements of {} and no figures are \
             shown. The raw records stay in the evidence set, marked `emulated`.",
            arch(e)
        )?;
        return Ok(());
    }
    let Some(first) = e.records.first() else {
        writeln!(w, "No timing run in this evidence set.")?;
        return Ok(());
    };
    let head = if e.records.iter().all(|r| r.counter.hardware_cycles) {
        "mean cycles".to_owned()
    } else {
        format!("mean ticks ({} @ {:.3} GHz)", first.counter.name, first.counter.measured_hz / 1e9)
    };
    figures(w, (e.family, &e.records), &head)?;
    if e.family.ops.iter().any(|o| o.bytes.is_some()) {
        baselines(w, e)?;
    }
    spreads(w, e)?;
    per_call(w, e, &head)?;
    lengths(w, e)?;
    if !e.variants.is_empty() {
        writeln!(
            w,
            "\n### Optimized implementations\n\nThe manifest's variant instances, not the reference implementation \
             the figures above (and the seed pages) are of; timed the same way, in the same run. Their KAT results \
             are in section 3.\n"
        )?;
        figures(w, (e.family, &e.variants), &head)?;
    }
    writeln!(w, "\n{}", self_reported_line(&e.records))?;
    if let Some(line) = cores_line(&e.records) {
        writeln!(w, "\n{line}")?;
    }
    let unchecked = unchecked_libraries(e);
    if !unchecked.is_empty() {
        writeln!(
            w,
            "\nNot the library the KAT run of section 3 checked (another build or source): {}. \
             Their figures stand without a PASS.",
            unchecked.join(", ")
        )?;
    }
    Ok(())
}

/// The main table of `records`: per message size for a family that hashes messages,
/// per operation otherwise.
fn figures(w: &mut String, (family, records): (&Family, &[Record]), head: &str) -> Result<()> {
    if family.ops.iter().any(|o| o.bytes.is_some()) {
        per_message(w, (family, records), head)?;
    } else {
        per_operation(w, (family, records), head)?;
    }
    budgets(w, records)
}

/// The time budgets the records were timed within, and what each allowed.
fn budgets(w: &mut String, records: &[Record]) -> Result<()> {
    let with: Vec<(&Record, &crate::evidence::schema::Budget)> =
        records.iter().filter_map(|r| r.budget.as_ref().map(|b| (r, b))).collect();
    let Some((_, first)) = with.first() else { return Ok(()) };
    writeln!(
        w,
        "\nTime budgets ({}): each operation's trials are what fit in its budget at the cost of one trial that \
         calibration measured by the host's clock (the calls run after them counted as one trial more), shorter \
         trials when fewer than {} fit; below that, \"{}\": its figures are no result.\n",
        md(&first.source),
        stats::TRIALS_FLOOR,
        stats::NOT_ENOUGH
    )?;
    writeln!(w, "| instance | operation | budget | per trial | allowed (trials × iters) |\n|---|---|---|---|---|")?;
    for (r, b) in with {
        let allowed = format!("{} × {}", b.allowed, b.iterations);
        let allowed = if b.enough { allowed } else { format!("{allowed}: {}", stats::NOT_ENOUGH) };
        let (budget, unit) = (forms::time(b.seconds * 1e9), forms::time(b.unit_ns));
        writeln!(w, "| {} | {} | {budget} | {unit} | {allowed} |", md(&r.label), op_cell(r))?;
    }
    Ok(())
}

/// The message size an operation of the family hashes (`hash_4096`: 4096).
pub(crate) fn message_bytes(family: &Family, r: &Record) -> Option<u64> {
    family.message_bytes(&r.op)
}

/// Hash functions: one row per message size, with per-byte figures, and the calls on
/// content drawn at run time where they differ from the reference content.
fn per_message(w: &mut String, (family, records): (&Family, &[Record]), head: &str) -> Result<()> {
    let per_byte = head.replace("mean ", "").replace(" (", "/byte (");
    let per_byte = if per_byte == "cycles" { "cycles/byte".to_owned() } else { per_byte };
    writeln!(
        w,
        "| instance | message | {head} | {per_byte} | mean time | MB/s | n | noise |\n|---|---|---|---|---|---|---|---|"
    )?;
    let (mut depends, mut too_few) = (Vec::new(), Vec::new());
    for r in records {
        let a = &r.aggregate;
        if !stats::enough(r) {
            let size = message_bytes(family, r).map_or_else(|| op_cell(r), |b| format!("{b} B"));
            let n = format!("{} ({} × {})", a.n, a.trials, a.iterations);
            writeln!(w, "| {} | {size} | {} | | | | {n} | – |", md(&r.label), stats::NOT_ENOUGH)?;
            continue;
        }
        let Some(bytes) = message_bytes(family, r) else {
            writeln!(
                w,
                "| {} | {} | {} | | {} | | {} ({} × {}) | {} |",
                md(&r.label),
                op_cell(r),
                forms::cycles(a.mean_ticks),
                forms::time(a.mean_ns),
                a.n,
                a.trials,
                a.iterations,
                noise_cell(r)
            )?;
            continue;
        };
        let mbps = bytes as f64 / a.mean_ns * 1e3;
        writeln!(
            w,
            "| {} | {bytes} B{} | {} | {} | {} | {} | {} ({} × {}) | {} |",
            md(&r.label),
            op_mark(r),
            forms::cycles(a.mean_ticks),
            forms::per_byte(a.mean_ticks / bytes as f64),
            forms::time(a.mean_ns),
            forms::rate(mbps),
            a.n,
            a.trials,
            a.iterations,
            noise_cell(r)
        )?;
        if let Some(c) = &r.content {
            content_row(&mut depends, &mut too_few, &format!("{} {bytes} B", r.label), c);
        }
    }
    noise_rule(w, records)?;
    writeln!(
        w,
        "\nMessages as the reference method gives them (`msg[i] = (i·131 + N) mod 256`); every call XORs the \
         previous digest into the message's first bytes, so no call repeats an input."
    )?;
    if let Some(c) = records.iter().find_map(|r| r.content.as_ref()) {
        writeln!(
            w,
            "\nContent control ({}): dudect's tests on the calls' times (Welch's t, as in the constant-time test); \
             |t| above {} says the speed depends on the content, and a verdict needs {} measurements of each class.",
            md(&c.classes),
            c.threshold,
            c.min_per_class
        )?;
    }
    if !depends.is_empty() {
        writeln!(w, "\nSpeed depends on the message content: {}.", md(&depends.join("; ")))?;
    }
    if !too_few.is_empty() {
        writeln!(w, "\nToo few content-control measurements for a verdict: {}.", md(&too_few.join("; ")))?;
    }
    Ok(())
}

/// One record's content control, where it says more than "none found".
fn content_row(depends: &mut Vec<String>, too_few: &mut Vec<String>, what: &str, c: &ContentControl) {
    match (c.verdict, &c.welch) {
        (ContentVerdict::Depends, Some(t)) => {
            let ratio = c
                .ratio
                .map_or(String::new(), |r| format!("; {} × the reference content's time per call", forms::rate(r)));
            depends.push(format!("{what} (t = {:.1}{ratio})", t.t));
        }
        (ContentVerdict::TooFewMeasurements, _) => {
            too_few.push(format!("{what} ({} and {} measurements)", c.taken[0], c.taken[1]))
        }
        _ => {}
    }
}

/// The same-run baselines' own figures, and each instance's time per message over
/// theirs at the same size.
fn baselines(w: &mut String, e: &Evidence) -> Result<()> {
    if e.baselines.is_empty() {
        writeln!(w, "\nNo same-run baselines in this evidence set (`bench` times them unless `--no-baselines`).")?;
        return Ok(());
    }
    let mut names: Vec<&str> = e.baselines.iter().map(|b| b.label.as_str()).collect();
    names.dedup();
    writeln!(
        w,
        "\nSame-run baselines: {} of the pinned PQClean tree, timed in the same container and run at the same \
         sizes (`submissions/baseline-hash.toml`).\n",
        names.join(", ")
    )?;
    let sizes: Vec<u64> = e.family.ops.iter().filter_map(|o| o.bytes).collect();
    let cols: String = sizes.iter().map(|b| format!(" {b} B |")).collect();
    writeln!(w, "Cycles (or counter ticks) per byte:\n\n| baseline |{cols}\n|---|{}", "---|".repeat(sizes.len()))?;
    for name in &names {
        let cells: String = sizes
            .iter()
            .map(|&bytes| {
                let at = e.baselines.iter().find(|b| b.label == *name && message_bytes(e.family, b) == Some(bytes));
                at.map_or(" – |".to_owned(), |b| {
                    format!(" {} |", forms::per_byte(b.aggregate.mean_ticks / bytes as f64))
                })
            })
            .collect();
        writeln!(w, "| {} |{cells}", md(name))?;
    }
    let heads: String = names.iter().map(|n| format!(" × {} |", md(n))).collect();
    writeln!(w, "\nTime per message over each baseline's at the same size (2.0 × = twice the baseline's time):\n")?;
    writeln!(w, "| instance | message |{heads}\n|---|---|{}", "---|".repeat(names.len()))?;
    for r in &e.records {
        let Some(bytes) = message_bytes(e.family, r) else { continue };
        let cells: String = names
            .iter()
            .map(|n| {
                let base = e.baselines.iter().find(|b| b.label == *n && b.op == r.op);
                base.map_or(" – |".to_owned(), |b| {
                    format!(" {} |", forms::ratio(r.aggregate.mean_ns / b.aggregate.mean_ns))
                })
            })
            .collect();
        writeln!(w, "| {} | {bytes} B |{cells}", md(&r.label))?;
    }
    Ok(())
}

fn per_operation(w: &mut String, (family, records): (&Family, &[Record]), head: &str) -> Result<()> {
    writeln!(w, "| instance | operation | {head} | mean time | ops/s | median trial | n (trials × iters) | noise |")?;
    writeln!(w, "|---|---|---|---|---|---|---|---|")?;
    for r in records {
        let a = &r.aggregate;
        if !stats::enough(r) {
            let n = format!("{} ({} × {})", a.n, a.trials, a.iterations);
            writeln!(w, "| {} | {} | {} | – | – | – | {n} | – |", md(&r.label), op_cell(r), stats::NOT_ENOUGH)?;
            continue;
        }
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} ({} × {}){} | {} |",
            md(&r.label),
            op_cell(r),
            forms::cycles(a.mean_ticks),
            forms::time(a.mean_ns),
            forms::rate(a.ops_per_s),
            forms::time(a.median_trial_ns),
            a.n,
            a.trials,
            a.iterations,
            retried(family, r),
            noise_cell(r)
        )?;
    }
    noise_rule(w, records)
}

/// The rule behind the noise column, under the table, when a row is marked.
fn noise_rule(w: &mut String, records: &[Record]) -> Result<()> {
    if records.iter().any(|r| !stats::indicative(r).is_empty()) {
        writeln!(w, "\n{}", stats::indicative_rule())?;
    }
    Ok(())
}

/// Beside a record's figures: why they are indicative only (`stats::indicative`), or –.
fn noise_cell(r: &Record) -> String {
    let why = stats::indicative(r);
    if why.is_empty() {
        "–".into()
    } else {
        format!("indicative: {}", why.join(", "))
    }
}

/// The operation as a table names it, marked when the host refuted or could not check
/// its figures.
fn op_cell(r: &Record) -> String {
    format!("{}{}", r.op.name(), op_mark(r))
}

fn op_mark(r: &Record) -> &'static str {
    match r.host_check.credibility {
        Credibility::NotCredible => " (NOT CREDIBLE)",
        Credibility::SelfReported => " (unchecked)",
        Credibility::Checked => "",
    }
}

/// The spread over trials as the field reports it (`stats::spread`), beside the
/// figures above.
fn spreads(w: &mut String, e: &Evidence) -> Result<()> {
    writeln!(
        w,
        "\nSpread over the trials (each trial's time per operation): mean ± standard deviation as liboqs \
         reports it, median with quartiles as eBACS does, and the fastest and slowest trial.\n"
    )?;
    writeln!(
        w,
        "| instance | operation | mean ± sd | median [Q1, Q3] | min – max | trials |\n|---|---|---|---|---|---|"
    )?;
    for r in &e.records {
        let s = stats::spread(&stats::kept_ns_per_op(r.trials.iter().map(|t| &t.trial)));
        let t = forms::time;
        writeln!(
            w,
            "| {} | {} | {} ± {} | {} [{}, {}] | {} – {} | {} |",
            md(&r.label),
            op_cell(r),
            t(s.mean),
            t(s.sd),
            t(s.median),
            t(s.q1),
            t(s.q3),
            t(s.min),
            t(s.max),
            s.n
        )?;
    }
    Ok(())
}

/// Single calls, where some record timed them (records before it did not).
fn per_call(w: &mut String, e: &Evidence, head: &str) -> Result<()> {
    if e.records.iter().all(|r| r.per_call.is_none()) {
        return Ok(());
    }
    let unit = head.trim_start_matches("mean ");
    writeln!(w, "\n{}\n", per_call_method(unit))?;
    writeln!(
        w,
        "| instance | operation | median {unit} | [Q1, Q3] | 99th percentile | min – max | median time | overhead | \
         calls |\n|---|---|---|---|---|---|---|---|---|"
    )?;
    for r in &e.records {
        writeln!(w, "| {} | {} | {} |", md(&r.label), op_cell(r), per_call_cells(r))?;
    }
    for r in &e.records {
        if let Some(why) = r.per_call.as_ref().and_then(|p| p.doubt.as_deref()) {
            writeln!(w, "\nIn doubt, {} {}: {}.", md(&r.label), r.op.name(), md(why))?;
        }
    }
    Ok(())
}

/// The cells of one record's calls run: its figures, or why there are none.
fn per_call_cells(r: &Record) -> String {
    let c = forms::cycles;
    match r.per_call.as_ref().map(|p| (p.figures, &p.failed)) {
        Some((Some(f), _)) => format!(
            "{}{} | [{}, {}] | {} | {} – {} | {} | {} | {}",
            c(f.median as f64),
            if r.per_call.as_ref().is_some_and(|p| p.doubt.is_some()) { " (in doubt)" } else { "" },
            c(f.q1 as f64),
            c(f.q3 as f64),
            c(f.p99 as f64),
            c(f.min as f64),
            c(f.max as f64),
            forms::time(f.median as f64 / r.aggregate.counter_hz * 1e9),
            c(f.overhead_ticks as f64),
            f.calls
        ),
        Some((None, Some(why))) => {
            format!("not measured: {} | | | | | | |", md(why.lines().next().unwrap_or_default()))
        }
        _ => "not measured | | | | | | |".into(),
    }
}

fn per_call_method(unit: &str) -> String {
    format!(
        "Single calls, one at a time, as eBACS reports them: in a run of its own after the trials, each call of \
         the operation is bracketed by two counter reads; the counter's own cost (the median of as many reads \
         around an empty call, the overhead column) is subtracted from each, and the median, quartiles and 99th \
         percentile are taken by nearest rank, in {unit}. The tables above are the other kind of figure, which \
         the seed pages report: each trial's counter over its whole loop divided by its iterations, the mean over \
         the trials; a mean takes in the slow calls that a median leaves out. Self-reported by the driver inside the candidate's process, like every \
         figure here; a median more than {}x below the trials' CPU time per operation, as the host reads it from \
         outside, is marked in doubt (a different load between the two runs, or samples forged low).",
        crate::measure::bench::PROBE_AGREEMENT
    )
}

/// The seed pages' `n` cell note: `; 10 failed signing attempts retried`.
fn retried(family: &Family, r: &Record) -> String {
    match r.failed_attempts {
        0 => String::new(),
        n => format!("; {n} {}", family.retried),
    }
}

/// Lengths of a variable output (signatures) over the timed calls, which the reference
/// method never reports.
fn lengths(w: &mut String, e: &Evidence) -> Result<()> {
    let Some(size) = e.family.variable_output.and_then(|id| e.family.sizes.iter().find(|s| s.id == id)) else {
        return Ok(());
    };
    let rows: Vec<(&Record, schema::LenStats)> = e.records.iter().filter_map(|r| r.out_len.map(|l| (r, l))).collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(w, "\n{} lengths returned by the timed calls (bytes):\n", capitalized(size.heading))?;
    writeln!(w, "| instance | operation | min | mean | max | calls |\n|---|---|---|---|---|---|")?;
    for (r, l) in rows {
        let mean = format!("{:.1}", l.mean());
        writeln!(w, "| {} | {} | {} | {mean} | {} | {} |", md(&r.label), r.op, l.min, l.max, l.count)?;
    }
    Ok(())
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn capitalized(s: &str) -> String {
    let mut s = s.to_owned();
    s[..1].make_ascii_uppercase();
    s
}

/// How many cores the trials ran on at once, where the rest of the run went, and the
/// most other work the host saw on a trial's core; None when no record was confined.
fn cores_line(records: &[Record]) -> Option<String> {
    use crate::container::cores::format_list;
    let used: Vec<&schema::CoreUse> = records.iter().filter_map(|r| r.core.as_ref()).collect();
    let first = used.first()?;
    let mut timing: Vec<usize> = used.iter().flat_map(|c| c.timing_cores.iter().copied()).collect();
    timing.sort_unstable();
    timing.dedup();
    let others = match first.others_on.as_slice() {
        [] if timing.len() > 1 => {
            "no core was left for the run's other work, which took turns with the timing steps".into()
        }
        [] => "the rest of the run was not confined".into(),
        o => format!("the run's other work and the tool ran on cores {}", format_list(o)),
    };
    let other_ns = |r: &Record| {
        let kept = r.trials.iter().filter(|t| !t.trial.replaced);
        kept.filter_map(|t| Some(t.cores_busy_ns?.saturating_sub(t.host_cpu_ns?))).max()
    };
    let most = records.iter().filter_map(|r| Some((other_ns(r)?, r))).max_by_key(|(ns, _)| *ns);
    let most = most.map_or(String::new(), |(ns, r)| {
        format!(
            " The most busy time the host read on a trial's core (and its siblings) beyond the trial's own CPU: \
             {:.1} ms, in a trial of {} {} (`/proc/stat`, counted in the kernel's clock ticks).",
            ns as f64 / 1e6,
            md(&r.label),
            r.op.name()
        )
    });
    Some(format!(
        "Timing cores: {} ({}), one trial container at a time on each, confined to it by the engine's cpuset; \
         {others}.{most}",
        timing.len(),
        format_list(&timing)
    ))
}

/// Which figures are the driver's own word and how the host checked them.
fn self_reported_line(records: &[Record]) -> String {
    let count = |c: Credibility| records.iter().filter(|r| r.host_check.credibility == c).count();
    format!(
        "Times and ticks are self-reported by the timing driver inside the candidate's process; the host \
         checked them against the container's CPU time read from its cgroup (per trial: CPU <= {} x accounted \
         time + 1.5 x a trial process's start, measured in the same container, + {} ms; {} ms under \
         emulation): {} checked, {} not credible, {} unchecked (no host reading).",
        crate::measure::bench::CPU_FACTOR,
        crate::measure::bench::MARGIN_NS / 1_000_000,
        crate::measure::bench::EMULATED_MARGIN_NS / 1_000_000,
        count(Credibility::Checked),
        count(Credibility::NotCredible),
        count(Credibility::SelfReported)
    )
}

/// Instances whose timed library is not, byte for byte, one the KAT run passed.
fn unchecked_libraries(e: &Evidence) -> Vec<String> {
    let passed = |label: &str, sha: &str| {
        e.kat.as_ref().is_some_and(|k| {
            k.instances.iter().any(|i| {
                i.label == label
                    && i.status == crate::kat::verify::Status::Pass
                    && i.library_sha256.as_deref() == Some(sha)
            })
        })
    };
    let mut labels: Vec<String> =
        e.records.iter().filter(|r| !passed(&r.label, &r.library_sha256)).map(|r| r.label.clone()).collect();
    labels.dedup();
    labels
}

fn resources(w: &mut String, e: &Evidence) -> Result<()> {
    writeln!(w, "\n## 5. Resource consumption\n")?;
    rss(w, e)?;
    crate::pages::library::code_size(w, e.kat.as_ref())
}

fn rss(w: &mut String, e: &Evidence) -> Result<()> {
    if e.records.is_empty() {
        writeln!(w, "{NOT_MEASURED}")?;
        return Ok(());
    }
    writeln!(
        w,
        "Static memory is the sum of the library's PT_LOAD segments; peak memory is the process high-water \
         mark (VmHWM) including the driver and libc.\n"
    )?;
    if e.records.iter().any(|r| r.emulated) {
        writeln!(
            w,
            "Emulated: the RSS figures marked (qemu-user) are of the qemu-user process that ran the driver, \
             not of the library on {}.\n",
            arch(e)
        )?;
    }
    // The stack column only where some record measured it (records before it did not).
    let stack = e.records.iter().any(|r| r.memory.stack.is_some());
    let (head, rule) = if stack { (" stack, one call (bytes) |", "---|") } else { ("", "") };
    writeln!(
        w,
        "| instance | operation | static: ELF image (bytes) | baseline RSS | peak RSS |{head}\n|---|---|---|---|---|{rule}"
    )?;
    for r in &e.records {
        let m = &r.memory;
        let (label, op) = (md(&r.label), r.op.name());
        let rss = |k: i64| if r.emulated && k >= 0 { format!("{} (qemu-user)", forms::kib(k)) } else { forms::kib(k) };
        let cell = if stack { format!(" {} |", stack_cell(m.stack.as_ref())) } else { String::new() };
        writeln!(
            w,
            "| {label} | {op} | {} | {} | {} |{cell}",
            m.static_image_bytes,
            rss(m.baseline_rss_kib),
            rss(m.peak_rss_kib)
        )?;
    }
    if stack {
        let mut painted: Vec<u64> = e.records.iter().filter_map(|r| r.memory.stack.as_ref()?.painted_bytes).collect();
        painted.sort_unstable();
        painted.dedup();
        let painted: Vec<String> = painted.iter().map(|b| format!("{} KiB", b >> 10)).collect();
        writeln!(
            w,
            "\n{} Painted here: {}.",
            stack_method(),
            listed(&painted.iter().map(String::as_str).collect::<Vec<_>>())
        )?;
    }
    Ok(())
}

/// One stack figure: the bytes, `>=` when the whole painted region was written, what
/// failed, or a dash where the record has none.
fn stack_cell(s: Option<&crate::evidence::schema::StackMark>) -> String {
    match s {
        None => "—".into(),
        Some(s) => match (s.used_bytes, &s.failed) {
            (Some(b), _) if s.exceeded => format!("≥ {b} (the whole painted region)"),
            (Some(b), _) => b.to_string(),
            (None, Some(why)) => format!("not measured: {}", md(why.lines().next().unwrap_or_default())),
            (None, None) => "not measured".into(),
        },
    }
}

fn stack_method() -> String {
    format!(
        "Stack is pqm4's method, in an untimed run of its own per operation (one call, no warm-up): the timing \
         driver paints up to {} MiB of stack below its frame (the stack limit less 1 MiB when lower) with a \
         pattern, makes the call, and scans from the \
         deepest end for the first word changed; the figure is the distance from its stack pointer at the call \
         to that word, the driver's call wrapper (tens of bytes) included; ≥ says the whole painted region was \
         written, so the call used at least that. It is self-reported by the driver inside the candidate's \
         process, which could write any figure: the host refuses one outside the painted region (plus {} KiB) \
         and only shows the rest.",
        crate::measure::bench::STACK_PAINT_MAX >> 20,
        crate::measure::bench::STACK_GAP_MAX >> 10
    )
}

fn sizes(w: &mut String, e: &Evidence) -> Result<()> {
    let f = e.family;
    writeln!(w, "\n## 6. Transmission and storage overhead\n")?;
    if e.records.is_empty() {
        writeln!(w, "{NOT_MEASURED}")?;
        return Ok(());
    }
    let (external, api_only): (Vec<&SizeName>, Vec<&SizeName>) = f.sizes.iter().partition(|s| s.external);
    let plural: Vec<String> = api_only.iter().map(|s| format!("{}s", s.heading)).collect();
    writeln!(
        w,
        "{} from the catalog (`submissions/{}`) where it has a row, else the API; {} are API figures.\n",
        capitalized(&listed(&external.iter().map(|s| s.heading).collect::<Vec<_>>())),
        f.catalog,
        listed(&plural.iter().map(String::as_str).collect::<Vec<_>>())
    )?;
    let heads: String = f.sizes.iter().map(|s| format!(" {} |", s.heading)).collect();
    writeln!(w, "| instance |{heads} basis |\n|---|{}---|", "---|".repeat(f.sizes.len()))?;
    let mut seen: Vec<&str> = Vec::new();
    for r in &e.records {
        if seen.contains(&r.label.as_str()) {
            continue;
        }
        seen.push(&r.label);
        let row = r.sizes.external.as_ref();
        let cells: String = f.sizes.iter().map(|s| format!(" {} |", size(s, r))).collect();
        let basis = row.map_or("API".to_owned(), |row| row.basis.to_string());
        writeln!(w, "| {} |{cells} {basis} |", md(&r.label))?;
    }
    if let Some(extra) = f.sizes_extra {
        let firsts: Vec<&Record> = seen.iter().filter_map(|l| e.records.iter().find(|r| r.label == *l)).collect();
        w.push_str(&extra(&firsts));
    }
    if !e.audit.is_empty() {
        writeln!(w, "\nSize audit ({} disagreements):", e.audit.len())?;
        for d in &e.audit {
            match (d.api, d.catalog) {
                (Some(a), Some(c)) => writeln!(w, "- {} {}: API {a}, catalog {c}", md(&d.instance), d.field)?,
                _ => writeln!(w, "- {}: no row in the size catalog", md(&d.instance))?,
            }
        }
    }
    Ok(())
}

/// One size of a record's instance: the catalog's where it has a row and the size is
/// taken from it, else the API's.
pub(crate) fn size(s: &SizeName, r: &Record) -> u64 {
    let row = r.sizes.external.as_ref().filter(|_| s.external);
    row.and_then(|row| row.sizes.0.get(s.id)).copied().unwrap_or(r.sizes.api.get(s.id))
}

/// The seed pages' "Symmetric primitives": the derived survey verdict, then the share
/// of each operation in the ICCS hash functions and DRNG (and the submission's own
/// primitives), and the calls per operation.
fn symmetric(w: &mut String, e: &Evidence) -> Result<()> {
    writeln!(w, "\n## Symmetric primitives\n")?;
    let Some(s) = &e.survey else {
        writeln!(w, "Not profiled: run `cargo xtask profile`.")?;
        return Ok(());
    };
    let notes = if s.notes.is_empty() { String::new() } else { format!(" — {}", s.notes.join("; ")) };
    let mark = if s.caveat.is_some() { " ¹" } else { "" };
    writeln!(w, "Survey verdict: {}{notes}{mark}\n", s.verdict)?;
    for i in s.instances.iter().filter(|i| i.verdict != s.verdict || !i.notes.is_empty()) {
        writeln!(
            w,
            "- {}: {}{}",
            md(&i.label),
            i.verdict,
            i.notes.iter().map(|n| format!("; {}", md(n))).collect::<String>()
        )?;
    }
    writeln!(w, "\nRule: {}\n", s.rule)?;
    if let Some(c) = &s.caveat {
        writeln!(w, "¹ Not seen by the wrappers: {}.\n", md(c))?;
    }
    writeln!(
        w,
        "Share of each operation spent in the wrapped functions (profiling variant with link-time wrappers, \
         measured in the same run as its reference build):\n"
    )?;
    writeln!(
        w,
        "| instance | operation | pseudohash/XOF/sm3 | DRNG | own primitives | calls per operation | wrapper overhead |\n\
         |---|---|---|---|---|---|---|"
    )?;
    let pct = forms::percent;
    for r in &e.profiles {
        let share = |pick: &dyn Fn(GroupKind) -> bool| pct(crate::measure::profile::kind_share(&r.groups, pick));
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | ×{:.2} |",
            md(&r.label),
            r.op.name(),
            share(&|k| k == GroupKind::IccsHash),
            share(&|k| k == GroupKind::IccsDrng),
            share(&|k| k == GroupKind::Direct),
            md(&crate::measure::profile::calls_text(&r.groups)),
            r.overhead_ratio
        )?;
    }
    if e.profiles.iter().any(|r| r.emulated) {
        writeln!(w, "\nEmulated: these shares are of the emulator's time, not measurements of the architecture.")?;
    }
    Ok(())
}

fn index(w: &mut String, layout: &Layout, sub: &Submission) -> Result<()> {
    writeln!(w, "\n## 7. Raw evidence index\n")?;
    let system = layout.system_dir.file_name().unwrap_or_default();
    writeln!(
        w,
        "Paths are relative to `{}/` in the evidence set; each timing record holds its commands, environment and \
         trials, and `{}` at the set's root lists every file with its SHA-256.\n",
        md(system),
        evidence::INDEX
    )?;
    let root = layout.system_dir.parent().unwrap_or(&layout.system_dir);
    let mut rows: Vec<IndexRow> = evidence::read_index(root)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(path, sha)| index_row(layout, sub, &root.join(path), &sha))
        .collect();
    if rows.is_empty() {
        writeln!(w, "No file of {} in the evidence index.", sub.id)?;
        return Ok(());
    }
    rows.sort_by(|a, b| a.order.cmp(&b.order));
    writeln!(w, "| instance | item | file |\n|---|---|---|")?;
    for r in rows {
        writeln!(w, "| {} | {} | {} |", md(&r.instance), r.item, md(&r.file))?;
    }
    Ok(())
}

/// One row of §7: the instance (`all` for the submission's own files), what the file
/// is, its path under the system's folder, and where the row sorts (instance in
/// manifest order, then KAT, timing, profile, constant time, then the name).
struct IndexRow {
    order: (usize, usize, String),
    instance: String,
    item: String,
    file: String,
}

/// The kinds of file §7 lists, by folder.
const KINDS: [&str; 4] = ["KAT log", "timing", "hash profile", "constant time"];

fn index_row(layout: &Layout, sub: &Submission, path: &camino::Utf8Path, sha: &str) -> Option<IndexRow> {
    let dirs =
        [layout.kat_dir(&sub.id), layout.records_dir(&sub.id), layout.profile_dir(&sub.id), layout.ct_dir(&sub.id)];
    let kind = dirs.iter().position(|d| path.starts_with(d))?;
    let (name, file) = (path.file_name()?, path.strip_prefix(&layout.system_dir).ok()?.to_string());
    let position = |label: &str| sub.instances.iter().position(|i| i.label == label);
    if let Some((label, part)) = log_of(sub, name).filter(|_| kind == 0) {
        let part = if part.is_empty() { String::new() } else { format!(" {}", md(part)) };
        let item = format!("KAT log{part} (sha256 {}…)", md(sha.get(..16).unwrap_or(sha)));
        return Some(IndexRow { order: (position(label)?, kind, name.into()), instance: label.into(), item, file });
    }
    let op_of = |label: &str, op: &str| (position(label), format!("{} {}", KINDS[kind], md(op)));
    match name.strip_suffix(".json").and_then(|n| n.rsplit_once("__")).map(|(l, op)| (l, op_of(l, op))) {
        Some((label, (Some(at), item))) => {
            Some(IndexRow { order: (at, kind, name.into()), instance: label.into(), item, file })
        }
        _ => {
            let item = match name {
                "summary.json" => "KAT summary".to_owned(),
                "environment.json" => "environment manifest".to_owned(),
                "size_audit.json" => "size audit".to_owned(),
                "survey.json" => "symmetric-primitive survey".to_owned(),
                other => md(other),
            };
            Some(IndexRow { order: (usize::MAX, kind, name.into()), instance: "all".into(), item, file })
        }
    }
}

/// The instance and KAT file part of a log's name (`ML-KEM-512.log`, `H-256.2_12.log`).
fn log_of<'a>(sub: &'a Submission, name: &str) -> Option<(&'a str, &'a str)> {
    let family = sub.family().ok()?;
    sub.instances.iter().find_map(|i| {
        family
            .kat_parts
            .iter()
            .map(|p| p.id)
            .chain([""])
            .find(|p| evidence::kat_log_name(&i.label, p) == name)
            .map(|p| (i.label.as_str(), p))
    })
}

/// The KAT manifest as a page names it: its checkout path, or for one outside the
/// checkout its file name and digest (not the measuring machine's folders).
fn shown_manifest(path: &str, sha256: &str) -> String {
    let p = camino::Utf8Path::new(path);
    if p.is_absolute() {
        format!("`{}` outside the checkout (sha256 {sha256})", p.file_name().unwrap_or(""))
    } else {
        format!("`{path}` (sha256 {sha256})")
    }
}

/// The source as the seed pages name it, with the full digest.
fn compact(src: &Provenance) -> String {
    match src {
        Provenance::Crate { name, version, checksum } => format!("crate {name} {version} (sha256 {checksum})"),
        Provenance::Archive { file, sha256 } => format!("archive {file} (sha256 {sha256})"),
        // The folder's own name only: where it lay on the measuring machine is no
        // business of the page (the tree digest identifies it).
        Provenance::Directory { path, tree_sha256, note } => {
            let name = camino::Utf8Path::new(path).file_name().unwrap_or("");
            format!("{note} `{name}` (tree sha256 {tree_sha256})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sha::Sha256Hex;

    #[test]
    fn the_content_control_names_what_depends_and_what_had_too_few() {
        let control = |verdict, t: Option<f64>| ContentControl {
            verdict,
            classes: "classes".into(),
            taken: [600, 400],
            min_per_class: 500,
            threshold: 4.5,
            welch: t.map(|t| stats::Welch { t, test: "first order, all".into(), n: [588, 392], mean_ns: [1e3, 5e4] }),
            ratio: t.map(|_| 50.0),
        };
        let (mut depends, mut too_few) = (Vec::new(), Vec::new());
        content_row(&mut depends, &mut too_few, "h 4096 B", &control(ContentVerdict::Depends, Some(-80.04)));
        content_row(&mut depends, &mut too_few, "h 8192 B", &control(ContentVerdict::NoneFound, Some(1.2)));
        content_row(&mut depends, &mut too_few, "h 65536 B", &control(ContentVerdict::TooFewMeasurements, None));
        assert_eq!(depends, ["h 4096 B (t = -80.0; 50 × the reference content's time per call)"]);
        assert_eq!(too_few, ["h 65536 B (600 and 400 measurements)"]);
    }

    /// A record whose budget allowed too few trials shows no figure, and says so where
    /// the figures would be; the budget's table says what each budget allowed.
    #[test]
    fn figures_a_budget_did_not_allow_are_not_shown() {
        let golden = crate::project::root().join("xtask/tests/golden/record.json");
        let r: Record = schema::read(&golden).unwrap().unwrap();
        let b = stats::TimeBudget::given(std::time::Duration::from_secs(20));
        let few = Record { budget: Some(schema::Budget::of(&b, 7.5e9, (2, 1), stats::TRIALS_FLOOR)), ..r.clone() };
        let enough = Record { budget: Some(schema::Budget::of(&b, 3e9, (3, 13), stats::TRIALS_FLOOR)), ..r.clone() };
        let mut page = String::new();
        figures(&mut page, (&crate::family::KEM, &[few, enough]), "mean cycles").unwrap();
        let rows: Vec<&str> = page.lines().filter(|l| l.starts_with(&format!("| {} |", r.label))).collect();
        let mean = forms::time(r.aggregate.mean_ns);
        assert!(rows[0].contains("| not enough measurements |") && !rows[0].contains(&mean), "{}", rows[0]);
        assert!(rows[1].contains(&mean), "{}", rows[1]);
        assert!(page.contains("Time budgets (--budget)"), "{page}");
        assert!(page.contains("| 20 s | 7.5 s | 2 × 1: not enough measurements |"), "{page}");
        assert!(page.contains("| 20 s | 3 s | 3 × 13 |"), "{page}");
    }

    #[test]
    fn stack_cells_never_show_less_than_was_seen() {
        let mark = |used: Option<u64>, exceeded, failed: Option<&str>| crate::evidence::schema::StackMark {
            command: vec!["kem_bench".into(), "dec".into(), "1".into(), "0".into(), "stack".into()],
            used_bytes: used,
            painted_bytes: used.map(|_| 7 << 20),
            exceeded,
            failed: failed.map(str::to_owned),
        };
        assert_eq!(stack_cell(None), "—");
        assert_eq!(stack_cell(Some(&mark(Some(9784), false, None))), "9784");
        assert_eq!(stack_cell(Some(&mark(Some(7340080), true, None))), "≥ 7340080 (the whole painted region)");
        // The driver's words are the candidate's: escaped, one line, never a figure.
        let failed = stack_cell(Some(&mark(None, false, Some("`kem_bench` | killed by signal 11\n| 5 |"))));
        assert!(failed.starts_with("not measured: ") && !failed.contains(" | ") && !failed.contains('\n'), "{failed}");
        assert!(stack_method().contains("self-reported by the driver inside the candidate's process"));
    }

    #[test]
    fn timing_of_a_library_the_kat_run_did_not_pass_is_marked() {
        let golden = |f: &str| crate::project::root().join("xtask/tests/golden").join(f);
        let record: Record = schema::read(&golden("record.json")).unwrap().unwrap();
        let mut kat: Summary = schema::read(&golden("summary.json")).unwrap().unwrap();
        let entry = kat.instances.iter_mut().find(|i| i.label == record.label).unwrap();
        entry.library_sha256 = Some(record.library_sha256.clone());
        let mut e = Evidence {
            family: &crate::family::KEM,
            kat: Some(kat),
            env: None,
            records: vec![record],
            variants: vec![],
            baselines: vec![],
            audit: vec![],
            survey: None,
            profiles: vec![],
            ct: vec![],
        };
        assert!(unchecked_libraries(&e).is_empty());
        e.records[0].library_sha256 = "0".repeat(64);
        assert_eq!(unchecked_libraries(&e), ["ML-KEM-512"]);
        let mut page = String::new();
        performance(&mut page, &e).unwrap();
        assert!(
            page.contains("Not the library the KAT run of section 3 checked (another build or source): ML-KEM-512.")
        );
        e.kat = None;
        assert_eq!(unchecked_libraries(&e), ["ML-KEM-512"], "no KAT run, no PASS");
    }

    #[test]
    fn the_page_says_how_many_timing_cores_the_run_used_and_the_most_other_work_seen() {
        let golden = crate::project::root().join("xtask/tests/golden/record.json");
        let record: Record = schema::read(&golden).unwrap().unwrap();
        assert_eq!(cores_line(std::slice::from_ref(&record)), None, "not confined: nothing to say");
        let on = |core: usize, others: Vec<usize>, busy: u64| {
            let mut r = record.clone();
            let timing_cores = vec![0, 1];
            r.core = Some(schema::CoreUse { core, siblings: vec![], timing_cores, others_on: others, beside: None });
            r.trials.iter_mut().for_each(|t| t.cores_busy_ns = t.host_cpu_ns.map(|c| c + busy));
            r
        };
        let line = cores_line(&[on(0, vec![], 3_000_000), on(1, vec![], 12_500_000)]).unwrap();
        assert!(line.starts_with("Timing cores: 2 (0-1), one trial container at a time on each"), "{line}");
        assert!(line.contains("took turns with the timing steps"), "{line}");
        assert!(line.contains("beyond the trial's own CPU: 12.5 ms, in a trial of ML-KEM-512 enc"), "{line}");
        let line = cores_line(&[on(0, vec![2, 3], 0)]).unwrap();
        assert!(line.contains("other work and the tool ran on cores 2-3") && line.contains(": 0.0 ms"), "{line}");
    }

    #[test]
    fn pages_say_what_is_self_reported_and_mark_what_the_host_refuted() {
        let golden = crate::project::root().join("xtask/tests/golden/record.json");
        let record: Record = schema::read(&golden).unwrap().unwrap();
        let mut e = Evidence {
            family: &crate::family::KEM,
            kat: None,
            env: None,
            records: vec![record],
            variants: vec![],
            baselines: vec![],
            audit: vec![],
            survey: None,
            profiles: vec![],
            ct: vec![],
        };
        let mut page = String::new();
        performance(&mut page, &e).unwrap();
        assert!(page.contains("| ML-KEM-512 | enc | "), "{page}");
        assert!(page.contains("self-reported by the timing driver") && page.contains("1 checked, 0 not credible"));
        e.records[0].host_check.credibility = Credibility::NotCredible;
        let mut page = String::new();
        performance(&mut page, &e).unwrap();
        assert!(page.contains("| ML-KEM-512 | enc (NOT CREDIBLE) | "), "{page}");
        assert!(page.contains("0 checked, 1 not credible, 0 unchecked"), "{page}");
    }

    #[test]
    fn markup_in_evidence_text_is_escaped_but_words_are_kept() {
        assert_eq!(md("a|b`c`*d*"), "a\\|b\\`c\\`\\*d\\*");
        assert_eq!(md("get_random_number fix-vary__keygen.json"), "get_random_number fix-vary__keygen.json");
        assert_eq!(md("_em_ x_ __y"), "\\_em\\_ x\\_ \\_\\_y");
        assert_eq!(md("<b>&amp;\n"), "\\<b\\>\\&amp;\\n");
    }

    #[test]
    fn pages_name_no_folder_of_the_measuring_machine() {
        let digest = "ab".repeat(32);
        let dir = Provenance::Directory {
            path: "/home/someone/work/Reference_Implementation".into(),
            tree_sha256: Sha256Hex::computed(digest.clone()),
            note: "unpinned directory".into(),
        };
        assert_eq!(compact(&dir), format!("unpinned directory `Reference_Implementation` (tree sha256 {digest})"));
        let shown = shown_manifest("/tmp/x/m/fixture-kem/kat.sha256", &digest);
        assert!(shown.starts_with("`kat.sha256` outside the checkout") && !shown.contains("/tmp"), "{shown}");
        assert_eq!(shown_manifest("kat/a/kat.sha256", "d"), "`kat/a/kat.sha256` (sha256 d)");
    }
}
