//! `cargo xtask profile`: the seed pages' "Symmetric primitives" section, measured.
//! Each instance gets a profiling variant of its library with link-time wrappers
//! around the manifest's `[profile]` symbols (`drivers/profile.c`); each operation is
//! timed with the bench plan on both builds in the same run. A record per (instance,
//! operation) holds each group's share of the ticks and the calls per operation; the
//! survey derives, from constants and symbols in the library and the measured calls,
//! which implementations are compiled in and which are reached, and the verdict.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Context, Result};
use camino::Utf8Path;
use xshell::Shell;

use crate::compile::builder::{Build, BuildCtx, Built, RunCtx};
use crate::compile::sources::Source;
use crate::compile::submission::{GroupKind, Instance, ProfileSpec, Submission};
use crate::container::systems::SystemProfile;
use crate::evidence::schema::{
    self, Credibility, GroupShare, InstanceSurvey, ProfileRecord, Survey, SymbolCalls, ToolchainRecord, Verdict,
};
use crate::family::OpId;
use crate::measure::bench::Bench;
use crate::measure::bench::{Ctx, Timed};
use crate::measure::hostgate::Gate;
use crate::measure::runner;
use crate::{compile::recipe, measure::stats, project};

/// `profile`: the bench plan on a build with wrappers around the symmetric primitives.
#[derive(Debug, Clone)]
pub struct Profile {
    pub bench: Bench,
}

/// Byte patterns that show an implementation is in a library: every needle of a family
/// must occur. Tables in data are found on every architecture; constants built into
/// instructions only where the instruction set keeps them whole (x86-64).
const CONSTANTS: &[(&str, &str, &[&[u8]])] = &[
    ("Keccak", "Keccak-f round constants", &[&[0x82, 0x80, 0, 0, 0, 0, 0, 0, 0x8a, 0x80, 0, 0, 0, 0, 0, 0x80]]),
    ("SHA-2", "SHA-256 round constants", &[&[0x98, 0x2f, 0x8a, 0x42], &[0x91, 0x44, 0x37, 0x71]]),
    ("SM3", "SM3 initial value", &[&[0x6f, 0x16, 0x80, 0x73], &[0xb9, 0xb2, 0x14, 0x49]]),
    ("AES", "AES S-box", &[&[0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5, 0x30, 0x01, 0x67, 0x2b]]),
];

pub const RULE: &str = "Per instance, over every measured operation: ICCS-only when only ICCS groups \
(placeholder hash functions, DRNG) had calls; bypass when only the submission's own primitives \
(direct groups) had calls; mixed when both did; none when neither. Across instances: their common \
verdict, else instance-dependent. A family is dead when it is compiled in (constants or symbols \
in the library), no wrapper of it saw a call, and the library shows no way around the wrappers; it is \
undetermined when there is one: a call site no wrapper of its family covers (inside its own objects, \
under an alias, through `__real_`, nested in another family's wrapped code, or an address taken), or \
its constants in code or data that no wrapped function of its family alone refers to. An instance \
with an undetermined family is never ICCS-only or none: it is undetermined; so is every instance \
whose timings the host's CPU check found not credible, whatever its calls.";

/// What no verdict of absence can exclude: the wrappers see only what the groups name.
pub const UNSEEN: &str = "primitives the manifest's [profile] groups do not name: a private copy under another \
name, or one whose constants are made at run time, is neither counted nor excluded";

/// What the profiling library shows without running it.
#[derive(Debug, Default, Clone)]
pub struct Static {
    /// Family → evidence.
    pub compiled_in: BTreeMap<String, Vec<String>>,
    pub unseen_call_sites: BTreeMap<String, u64>,
    /// Family → where its constants are used outside its wrapped functions.
    pub constants_outside: BTreeMap<String, String>,
}

/// Constants and defined symbols of the library, and references to wrapped symbols
/// from outside the wrappers (calls inside the defining object, which `--wrap`
/// cannot redirect). Needs a library linked with `--emit-relocs`.
pub fn inspect(lib: &Utf8Path, spec: &ProfileSpec) -> Result<Static> {
    use object::{Object, ObjectSymbol};
    let data = project::read_regular(lib, 256 << 20)?;
    let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(&*data)
        .with_context(|| format!("{lib} is not a 64-bit ELF"))?;
    let mut st = Static::default();
    for (family, what, needles) in CONSTANTS {
        if needles.iter().all(|n| data.windows(n.len()).any(|w| w == *n)) {
            st.compiled_in.entry((*family).to_owned()).or_default().push(format!("constants: {what}"));
        }
    }
    let defined: BTreeSet<&str> = elf.symbols().filter(|s| s.is_definition()).filter_map(|s| s.name().ok()).collect();
    for g in &spec.groups {
        let found: Vec<&str> = g.symbols.iter().map(String::as_str).filter(|s| defined.contains(s)).collect();
        if !found.is_empty() {
            st.compiled_in.entry(g.family.clone()).or_default().push(format!("symbols: {}", found.join(", ")));
        }
    }
    st.unseen_call_sites = unseen_call_sites(&elf, spec);
    st.constants_outside = constants_outside(&elf, &data, spec, &st);
    Ok(st)
}

/// Text ranges covered by a wrapper, with the family they count for: each wrapper
/// (`__wrap_*`) and each wrapped function (a call nested in it counts once, there).
fn covered_ranges<'a>(
    elf: &'a object::read::elf::ElfFile64<object::Endianness>,
    family_of: &BTreeMap<&'a str, &'a str>,
) -> Vec<(u64, u64, &'a str)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    elf.symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .filter_map(|s| {
            let name = s.name().ok()?;
            let family = family_of.get(name.strip_prefix("__wrap_").unwrap_or(name))?;
            Some((s.address(), s.address() + s.size(), *family))
        })
        .collect()
}

fn family_of(spec: &ProfileSpec) -> BTreeMap<&str, &str> {
    spec.groups.iter().flat_map(|g| g.symbols.iter().map(move |s| (s.as_str(), g.family.as_str()))).collect()
}

/// References to wrapped symbols that no wrapper of their family sees: from code no
/// wrapper covers (calls inside a defining object file, `__real_<symbol>`, which the
/// linker resolves to the symbol, or an alias at the same address), from another
/// family's wrapped code (counted there), or from data (an address taken). A call nested
/// in a wrapped function of the same family counts once, by design.
fn unseen_call_sites(
    elf: &object::read::elf::ElfFile64<object::Endianness>,
    spec: &ProfileSpec,
) -> BTreeMap<String, u64> {
    use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionKind, SymbolKind};
    let family_of = family_of(spec);
    let covered = covered_ranges(elf, &family_of);
    let by_address: BTreeMap<u64, &str> = elf
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition())
        .filter_map(|s| s.name().ok().filter(|n| family_of.contains_key(n)).map(|n| (s.address(), n)))
        .collect();
    let mut unseen = BTreeMap::new();
    for section in elf.sections() {
        let name = section.name().unwrap_or_default();
        if name.starts_with(".debug") || name == ".eh_frame" {
            continue;
        }
        let text = section.kind() == SectionKind::Text;
        for (at, reloc) in section.relocations() {
            let RelocationTarget::Symbol(i) = reloc.target() else { continue };
            let Ok(sym) = elf.symbol_by_index(i) else { continue };
            let Ok(name) = sym.name() else { continue };
            let (target, via_wrapper) = match name.strip_prefix("__wrap_") {
                Some(w) if family_of.contains_key(w) => (w, true),
                _ if family_of.contains_key(name) => (name, false),
                _ if sym.kind() == SymbolKind::Text && sym.is_definition() => match by_address.get(&sym.address()) {
                    Some(w) => (*w, false),
                    None => continue,
                },
                _ => continue,
            };
            let inside = covered.iter().find(|(a, b, _)| text && (*a..*b).contains(&at)).map(|c| c.2);
            let seen = match inside {
                None => via_wrapper && text,
                Some(f) => f == family_of[target],
            };
            if !seen {
                *unseen.entry(target.to_owned()).or_default() += 1;
            }
        }
    }
    unseen
}

/// Families whose constants lie, or are referred to, outside the wrapped functions of
/// that family: code the wrappers may never see run. Constants in data are located by
/// the data symbol that holds them; one that no symbol holds cannot be placed.
fn constants_outside(
    elf: &object::read::elf::ElfFile64<object::Endianness>,
    data: &[u8],
    spec: &ProfileSpec,
    st: &Static,
) -> BTreeMap<String, String> {
    use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};
    let family_of = family_of(spec);
    let covered = covered_ranges(elf, &family_of);
    let in_family = |addr: u64, family: &str| covered.iter().any(|(a, b, f)| (*a..*b).contains(&addr) && *f == family);
    let mut outside = BTreeMap::new();
    for (family, _, needles) in CONSTANTS.iter().filter(|(f, _, _)| st.compiled_in.contains_key(*f)) {
        if !family_of.values().any(|f| f == family) {
            continue; // not measured at all: said so in the notes
        }
        let mut why = None;
        for needle in *needles {
            for off in data.windows(needle.len()).enumerate().filter(|(_, w)| w == needle).map(|(i, _)| i as u64) {
                let Some(sec) = elf.sections().find(|s| {
                    let loaded = matches!(
                        s.kind(),
                        SectionKind::Text
                            | SectionKind::Data
                            | SectionKind::ReadOnlyData
                            | SectionKind::ReadOnlyDataWithRel
                            | SectionKind::ReadOnlyString
                    );
                    loaded && s.file_range().is_some_and(|(start, len)| (start..start + len).contains(&off))
                }) else {
                    continue;
                };
                let addr = sec.address() + off - sec.file_range().map_or(0, |r| r.0);
                if sec.kind() == SectionKind::Text {
                    if !in_family(addr, family) {
                        why.get_or_insert(format!("in code at {addr:#x} outside its wrapped functions"));
                    }
                    continue;
                }
                let holder = elf.symbols().find(|s| {
                    s.kind() == SymbolKind::Data
                        && s.size() > 0
                        && (s.address()..s.address() + s.size()).contains(&addr)
                });
                let Some(holder) = holder else {
                    why.get_or_insert(format!("in data at {addr:#x} that no symbol holds"));
                    continue;
                };
                let (start, end) = (holder.address(), holder.address() + holder.size());
                for (at, reloc, text) in referrers(elf) {
                    let target = reloc_target(elf, &reloc);
                    if target.is_some_and(|t| (start..end).contains(&t)) && !(text && in_family(at, family)) {
                        let name = holder.name().unwrap_or("?");
                        why.get_or_insert(format!("{name} is referred to at {at:#x}, outside its wrapped functions"));
                    }
                }
            }
        }
        if let Some(w) = why {
            outside.insert((*family).to_owned(), w);
        }
    }
    outside
}

/// Every relocation of the library's allocated sections, with whether it is in text.
fn referrers<'a>(
    elf: &'a object::read::elf::ElfFile64<'a, object::Endianness>,
) -> impl Iterator<Item = (u64, object::Relocation, bool)> + 'a {
    use object::{Object, ObjectSection, SectionKind};
    elf.sections()
        .filter(|s| !s.name().unwrap_or_default().starts_with(".debug") && s.name().ok() != Some(".eh_frame"))
        .flat_map(|s| {
            let text = s.kind() == SectionKind::Text;
            s.relocations().map(move |(at, r)| (at, r, text))
        })
}

/// The address a relocation refers to: its symbol's value plus the addend, plus the 4
/// bytes an x86-64 PC-relative displacement is biased by (it counts from its own end).
fn reloc_target(elf: &object::read::elf::ElfFile64<object::Endianness>, r: &object::Relocation) -> Option<u64> {
    use object::{Architecture, Object, ObjectSymbol, RelocationKind, RelocationTarget};
    let RelocationTarget::Symbol(i) = r.target() else { return None };
    let base = elf.symbol_by_index(i).ok()?.address();
    let relative =
        matches!(r.kind(), RelocationKind::Relative | RelocationKind::PltRelative | RelocationKind::GotRelative);
    let bias = if elf.architecture() == Architecture::X86_64 && relative && r.size() == 32 { 4 } else { 0 };
    Some(base.wrapping_add_signed(r.addend()).wrapping_add(bias))
}

/// Each group's share and calls per operation from the kept trials of one operation.
/// The counts come from the candidate's own process: they must name exactly the
/// manifest's symbols, and the wrapped ticks cannot exceed the operation's.
pub(crate) fn shares(spec: &ProfileSpec, timed: &Timed) -> Result<(u64, u64, Vec<GroupShare>)> {
    let (mut operations, mut total) = (0, 0);
    let mut by_symbol: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let want: Vec<&String> = spec.groups.iter().flat_map(|g| &g.symbols).collect();
    for (trial, report) in timed.kept() {
        let got: Vec<&String> = report.profile.iter().map(|c| &c.symbol).collect();
        let wrapped = report.profile.iter().try_fold(0u64, |a, c| a.checked_add(c.ticks));
        if got != want || wrapped.is_none_or(|w| w > report.ticks) {
            bail!("the profiling driver reported counts that do not fit its symbols or its ticks");
        }
        operations += trial.iterations;
        total = report.ticks.saturating_add(total);
        for c in &report.profile {
            let e = by_symbol.entry(c.symbol.as_str()).or_default();
            e.0 = e.0.saturating_add(c.calls);
            e.1 = e.1.saturating_add(c.ticks);
        }
    }
    let groups = spec
        .groups
        .iter()
        .map(|g| {
            let symbols: Vec<SymbolCalls> = g
                .symbols
                .iter()
                .map(|s| {
                    let (calls, ticks) = by_symbol.get(s.as_str()).copied().unwrap_or_default();
                    SymbolCalls { symbol: s.clone(), calls, calls_per_op: calls as f64 / operations as f64, ticks }
                })
                .collect();
            let ticks = symbols.iter().map(|s| s.ticks).sum::<u64>();
            let share = if total == 0 { 0.0 } else { ticks as f64 / total as f64 };
            GroupShare { name: g.name.clone(), kind: g.kind, family: g.family.clone(), share, ticks, symbols }
        })
        .collect();
    Ok((operations, total, groups))
}

/// The survey of one submission from its instances' static facts and records.
pub fn survey(id: &str, system: &str, instances: &[(String, Static, Vec<ProfileRecord>)]) -> Survey {
    let surveyed: Vec<InstanceSurvey> = instances
        .iter()
        .map(|(l, st, recs)| {
            let ops: Vec<(OpId, &[GroupShare])> = recs.iter().map(|r| (r.op.clone(), r.groups.as_slice())).collect();
            let credible = recs.iter().all(|r| r.host_check.credibility != Credibility::NotCredible);
            survey_instance(l, st, &ops, credible)
        })
        .collect();
    let first = surveyed.first().map_or(Verdict::None, |s| s.verdict);
    let verdict = if surveyed.iter().all(|s| s.verdict == first) { first } else { Verdict::InstanceDependent };
    let common: Vec<String> = surveyed
        .first()
        .map(|s| s.notes.iter().filter(|n| surveyed.iter().all(|o| o.notes.contains(n))).cloned().collect())
        .unwrap_or_default();
    let caveat = surveyed.iter().find_map(|s| s.caveat.clone());
    Survey {
        schema: schema::version::<Survey>(),
        id: id.to_owned(),
        system: system.to_owned(),
        verdict,
        rule: RULE.to_owned(),
        notes: common,
        caveat,
        instances: surveyed,
    }
}

/// One instance's verdict and notes from what each operation reached.
fn survey_instance(label: &str, st: &Static, recs: &[(OpId, &[GroupShare])], credible: bool) -> InstanceSurvey {
    let mut reached: BTreeMap<String, Vec<OpId>> = BTreeMap::new();
    let mut kinds = BTreeSet::new();
    let mut families_reached = BTreeSet::new();
    for (op, groups) in recs {
        for g in groups.iter().filter(|g| g.symbols.iter().any(|s| s.calls > 0)) {
            reached.entry(g.name.clone()).or_default().push(op.clone());
            kinds.insert(if g.kind.is_iccs() {
                "iccs"
            } else if g.kind == GroupKind::Direct {
                "own"
            } else {
                "rng"
            });
            families_reached.insert(g.family.clone());
        }
    }
    let verdict = match (kinds.contains("iccs"), kinds.contains("own")) {
        (true, false) => Verdict::IccsOnly,
        (false, true) => Verdict::Bypass,
        (true, true) => Verdict::Mixed,
        (false, false) => Verdict::None,
    };
    let mut notes = Vec::new();
    let groups = recs.first().map(|r| r.1).unwrap_or_default();
    for family in st.compiled_in.keys().filter(|f| !families_reached.contains(*f)) {
        let mine: Vec<&GroupShare> = groups.iter().filter(|g| &g.family == family).collect();
        let unseen: u64 = mine
            .iter()
            .flat_map(|g| &g.symbols)
            .map(|s| st.unseen_call_sites.get(&s.symbol).copied().unwrap_or(0))
            .sum();
        notes.push(match (mine.is_empty(), unseen, st.constants_outside.get(family)) {
            (true, _, _) => format!("{family} compiled in, not measured (no [profile] group wraps it)"),
            (false, 0, None) => format!("{family} dead"),
            (false, 0, Some(w)) => format!("{family} undetermined (its constants: {w})"),
            (false, n, _) => format!("{family} undetermined ({n} call sites no wrapper of it sees)"),
        });
    }
    if !credible {
        notes.push("timings not credible (host CPU check): calls and shares are the candidate's word".into());
    }
    let undetermined = notes.iter().any(|n| n.contains(" undetermined ("));
    let verdict = match verdict {
        _ if !credible => Verdict::Undetermined,
        Verdict::IccsOnly | Verdict::None if undetermined => Verdict::Undetermined,
        v => v,
    };
    let caveat = claims_absence(verdict, &notes).then(|| UNSEEN.to_owned());
    InstanceSurvey { label: label.to_owned(), verdict, compiled_in: st.compiled_in.clone(), reached, notes, caveat }
}

/// A verdict or note that says something was not used: ICCS-only, none, "… dead".
fn claims_absence(verdict: Verdict, notes: &[String]) -> bool {
    matches!(verdict, Verdict::IccsOnly | Verdict::None) || notes.iter().any(|n| n.ends_with(" dead"))
}

/// `drng 11, pseudohash 2`: every symbol with calls, mean per operation.
pub fn calls_text(groups: &[GroupShare]) -> String {
    let mut parts = Vec::new();
    for g in groups {
        for s in g.symbols.iter().filter(|s| s.calls > 0) {
            let n = format!("{:.1}", s.calls_per_op);
            parts.push(format!("{} {}", s.symbol, n.strip_suffix(".0").unwrap_or(&n)));
        }
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

impl Profile {
    pub fn run(self, sh: &Shell) -> Result<()> {
        let system = SystemProfile::load(&self.bench.inputs.system)?;
        let bench = self.bench.with_profile(&system)?;
        let gate = bench.gate(&system)?;
        let run = bench.inputs.prepare(sh, |sub| check(&bench, sub))?;
        let failures = profile_all(&bench, sh, (&run.ctx, &gate), &run.work)?;
        crate::evidence::reindex(&bench.inputs.out)?;
        crate::ui::report("profile", (&bench.inputs.system, &bench.inputs.out), &failures)?;
        if !failures.is_empty() {
            let msg = format!("some instances could not be profiled:\n  {}", failures.join("\n  "));
            return Err(crate::ui::Findings(msg).into());
        }
        Ok(())
    }
}

/// Profile every submission of `work`; the instances that could not be profiled.
pub fn profile_all(
    bench: &Bench,
    sh: &Shell,
    run: (&RunCtx, &Gate),
    work: &[(Submission, Source)],
) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    for (sub, src) in work {
        failures.extend(profile_submission(bench, sh, run, (sub, src))?);
    }
    Ok(failures)
}

/// Only submissions with a `[profile]` and a `[bench]` section can be profiled.
pub fn check(bench: &Bench, sub: &Submission) -> Result<()> {
    bench.check(sub)?;
    if sub.profile.is_none() {
        return crate::ui::usage(format!("{} has no [profile] section: its manifest names no symbols to wrap", sub.id));
    }
    if bench.resume {
        // A profile record does not name its plan: whether it is current cannot be told.
        return crate::ui::usage(
            "profile has no --resume: its records do not name the plan they were made with; \
             `campaign --resume` skips a profile whose survey covers every instance",
        );
    }
    Ok(())
}

/// What the records of one submission share.
struct Facts<'a> {
    bench: &'a Bench,
    sub: &'a Submission,
    spec: &'a ProfileSpec,
    tc: &'a ToolchainRecord,
    gate: &'a Gate,
    harness_commit: String,
}

fn profile_submission(
    bench: &Bench,
    sh: &Shell,
    (run, gate): (&RunCtx, &Gate),
    (sub, src): (&Submission, &Source),
) -> Result<Vec<String>> {
    let sb = run.env.sandbox(runner::trial_limits(bench.inputs.limits()));
    let tc = run.env.record(sh, &sb)?;
    let bctx = BuildCtx { sh, env: &run.env, tc: &tc, sb: &sb, sub, src, inputs: &bench.inputs };
    let spec = sub.profile.as_ref().context("no [profile] section")?;
    let facts = Facts { bench, sub, spec, tc: &tc, gate, harness_commit: project::harness_commit(sh) };
    crate::say!(
        "{} ({}): symmetric-primitive profile, {} on {}",
        sub.id,
        sub.name,
        tc.gcc_version,
        run.env.arch.uname()
    );
    crate::say!(
        "  {:<18} {:<9} {:>9} {:>9} {:>9}  calls per operation",
        "instance",
        "op",
        "ICCS hash",
        "DRNG",
        "other"
    );
    let mut failures = Vec::new();
    let mut surveyed = Vec::new();
    // A survey speaks for whole instances of this run only (an operation not yet
    // measured is no evidence of a dead primitive): the earlier one goes before the
    // first record, and the new one is written as each instance is complete, so that
    // an interrupted run never leaves a survey that disagrees with its records.
    let stale = run.layout.survey(&sub.id);
    if std::fs::symlink_metadata(&stale).is_ok() {
        project::remove_file(&stale)?;
        crate::evidence::update_index(&bench.inputs.out)?;
    }
    for inst in sub.instances.iter().filter(|i| bench.inputs.selects(i)) {
        let (Built::Ok(reference), Built::Ok(profiled)) = (bctx.ensure(inst)?, bctx.ensure_profile(inst)?) else {
            failures.push(format!("{} {}: a build failed (see `cargo xtask verify`)", sub.id, inst.label));
            continue;
        };
        let st = inspect(&profiled.out.join(recipe::LIBRARY), spec)?;
        let mut recs = Vec::new();
        let family = sub.family()?;
        for op in family.profile_ops_for(&bench.ops, inst.passes)? {
            let timeout = std::time::Duration::from_hours(1);
            let ctx = |build| Ctx { family, sh, sb: &sb, build, cpu: bench.cpu, timeout };
            let started = project::now_utc();
            let _live = crate::ui::progress(format!("profile {} {} {}", sub.id, inst.label, op.name()), None);
            crate::ui::doing("timing the reference build");
            let reference_timed = bench.time_op(&ctx(&reference), &op)?;
            crate::ui::doing("timing the wrapped build");
            let timed = bench.time_op(&ctx(&profiled), &op)?;
            let rec = record(&facts, inst, (&reference, &profiled), &st, (&op, &reference_timed, &timed), started)?;
            print_row(&rec);
            schema::write(&run.layout.profile(&sub.id, &inst.label, op.name()), &rec)?;
            if rec.host_check.credibility == Credibility::NotCredible {
                let why = rec.host_check.detail.as_deref().unwrap_or_default();
                failures.push(format!("{} {} {}: profile timings not credible: {why}", sub.id, inst.label, op.name()));
            }
            crate::evidence::update_index(&bench.inputs.out)?;
            recs.push(rec);
        }
        surveyed.push((inst.label.clone(), st, recs));
        schema::write(&run.layout.survey(&sub.id), &survey(&sub.id, &bench.inputs.system, &surveyed))?;
        crate::evidence::update_index(&bench.inputs.out)?;
    }
    let survey = survey(&sub.id, &bench.inputs.system, &surveyed);
    print_survey(&survey);
    schema::write(&run.layout.survey(&sub.id), &survey)?;
    Ok(failures)
}

fn record(
    f: &Facts,
    inst: &Instance,
    (reference, profiled): (&Build, &Build),
    st: &Static,
    (op, reference_timed, timed): (&OpId, &Timed, &Timed),
    started: String,
) -> Result<ProfileRecord> {
    let (operations, total_ticks, groups) = shares(f.spec, timed)?;
    let mean = |t: &Timed| stats::aggregate(&t.kept().map(|k| k.0.clone()).collect::<Vec<_>>()).mean_ns;
    let (reference_mean_ns, profiled_mean_ns) = (mean(reference_timed), mean(timed));
    let mut warnings = Vec::new();
    if f.tc.emulated {
        warnings.push("emulated: shares are of the emulator's time, not of the architecture".into());
    }
    if profiled.record.plan.flags.iter().any(|f| f.starts_with("-flto")) {
        warnings.push("built with LTO: --wrap cannot see calls the link-time optimiser resolves or inlines".into());
    }
    for (family, w) in &st.constants_outside {
        warnings.push(format!("{family} constants outside its wrapped functions: {w}"));
    }
    if !st.unseen_call_sites.is_empty() {
        let list: Vec<String> = st.unseen_call_sites.iter().map(|(s, n)| format!("{s} {n}")).collect();
        warnings.push(format!("call sites no wrapper of their family sees: {}", list.join(", ")));
    }
    Ok(ProfileRecord {
        schema: schema::version::<ProfileRecord>(),
        id: f.sub.id.clone(),
        label: inst.label.clone(),
        op: op.clone(),
        system: f.bench.inputs.system.clone(),
        emulated: f.tc.emulated,
        counter: timed.kept().next().context("no trial")?.1.counter,
        operations,
        iterations: timed.plan.iterations,
        warmups: timed.plan.warmups,
        total_ticks,
        groups,
        unseen_call_sites: st.unseen_call_sites.clone(),
        host_check: timed.host_check.clone().worse(reference_timed.host_check.clone()),
        overhead_ratio: profiled_mean_ns / reference_mean_ns,
        reference_mean_ns,
        profiled_mean_ns,
        warnings,
        build_key: profiled.record.key.clone(),
        reference_build_key: reference.record.key.clone(),
        library_sha256: profiled.record.output_sha256(recipe::LIBRARY).context("no library")?.to_owned(),
        toolchain: f.tc.clone(),
        host_gate: f.gate.clone(),
        harness_commit: f.harness_commit.clone(),
        started,
        finished: project::now_utc(),
    })
}

/// The share of a kind of group, for tables.
pub fn kind_share(groups: &[GroupShare], pick: impl Fn(GroupKind) -> bool) -> f64 {
    // A fold, not sum(): an empty float sum is -0.0.
    groups.iter().filter(|g| pick(g.kind)).fold(0.0, |a, g| a + g.share)
}

fn print_row(r: &ProfileRecord) {
    let pct = crate::measure::stats::percent;
    crate::ui::row(crate::evidence::schema::ResultRow::measured(&r.id, &r.label, &r.op, "profiled"));
    crate::say!(
        "  {:<18} {:<9} {:>9} {:>9} {:>9}  {}  (overhead ×{:.2})",
        r.label,
        r.op.name(),
        pct(kind_share(&r.groups, |k| k == GroupKind::IccsHash)),
        pct(kind_share(&r.groups, |k| k == GroupKind::IccsDrng)),
        pct(kind_share(&r.groups, |k| !k.is_iccs())),
        calls_text(&r.groups),
        r.overhead_ratio
    );
    if r.overhead_ratio < 1.0 {
        // The wrappers cannot make code faster: the two builds' figures differ by noise
        // or code layout more than the wrappers cost.
        crate::say!(
            "      note: overhead below ×1 means the wrapped and the reference build differ by more than \
             the wrappers cost (noise or code layout); the shares stand, the overhead is not a speed-up"
        );
    }
    for w in &r.warnings {
        crate::say!("      note: {w}");
    }
}

fn print_survey(s: &Survey) {
    crate::say!(
        "  survey verdict: {}{}",
        s.verdict,
        if s.notes.is_empty() { String::new() } else { format!(" — {}", s.notes.join("; ")) }
    );
    if let Some(c) = &s.caveat {
        crate::say!("    (not seen by the wrappers: {c})");
    }
    for i in &s.instances {
        let compiled: Vec<&str> = i.compiled_in.keys().map(String::as_str).collect();
        let reached: Vec<&str> = i.reached.keys().map(String::as_str).collect();
        crate::say!(
            "    {:<18} {:<18} compiled in: {}; reached: {}",
            i.label,
            i.verdict.to_string(),
            compiled.join(", "),
            reached.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str, kind: GroupKind, family: &str, calls: u64) -> GroupShare {
        let symbols = vec![SymbolCalls { symbol: format!("{name}_fn"), calls, calls_per_op: calls as f64, ticks: 0 }];
        GroupShare { name: name.into(), kind, family: family.into(), share: 0.0, ticks: 0, symbols }
    }

    fn compiled(families: &[&str]) -> Static {
        let compiled_in = families.iter().map(|f| ((*f).to_owned(), vec!["constants".to_owned()])).collect();
        Static { compiled_in, unseen_call_sites: BTreeMap::new(), constants_outside: BTreeMap::new() }
    }

    #[test]
    fn verdicts_and_notes_follow_the_rule() {
        let iccs = |n| group("hash", GroupKind::IccsHash, "ICCS", n);
        let keccak = |n| group("keccak", GroupKind::Direct, "Keccak", n);
        let rng = group("randombytes", GroupKind::Randombytes, "randombytes", 1);
        let st = compiled(&["Keccak", "AES"]);
        let v = |groups: &[GroupShare]| survey_instance("x", &st, &[(OpId::new("keygen"), groups)], true);
        assert_eq!(v(&[iccs(2), keccak(0)]).verdict, Verdict::IccsOnly);
        assert_eq!(v(&[iccs(0), keccak(3), rng.clone()]).verdict, Verdict::Bypass);
        assert_eq!(v(&[iccs(1), keccak(1)]).verdict, Verdict::Mixed);
        assert_eq!(v(&[iccs(0), keccak(0), rng]).verdict, Verdict::None, "randomness alone is no primitive");
        let notes = v(&[iccs(2), keccak(0)]).notes;
        assert_eq!(notes, ["AES compiled in, not measured (no [profile] group wraps it)", "Keccak dead"]);
        // A call site no Keccak wrapper sees may reach it unseen: undetermined, never
        // dead, and the verdict cannot read ICCS-only.
        let mut hidden = compiled(&["Keccak"]);
        hidden.unseen_call_sites.insert("keccak_fn".into(), 2);
        let s = survey_instance("x", &hidden, &[(OpId::new("enc"), &[iccs(1), keccak(0)][..])], true);
        assert_eq!(s.notes, ["Keccak undetermined (2 call sites no wrapper of it sees)"]);
        assert_eq!(s.verdict, Verdict::Undetermined);
        // Its constants used by code outside its wrapped functions: the same.
        let mut copied = compiled(&["Keccak"]);
        copied.constants_outside.insert("Keccak".into(), "in code at 0x1000 outside its wrapped functions".into());
        let s = survey_instance("x", &copied, &[(OpId::new("enc"), &[iccs(1), keccak(0)][..])], true);
        assert_eq!(s.notes, ["Keccak undetermined (its constants: in code at 0x1000 outside its wrapped functions)"]);
        assert_eq!(s.verdict, Verdict::Undetermined);
        // A bypass stays a bypass; timings the host found not credible decide nothing,
        // whatever the calls they report.
        let s = survey_instance("x", &hidden, &[(OpId::new("enc"), &[iccs(0), keccak(3)][..])], true);
        assert_eq!(s.verdict, Verdict::Bypass);
        for calls in [[iccs(1), keccak(0)], [iccs(1), keccak(1)], [iccs(0), keccak(2)]] {
            let s = survey_instance("x", &compiled(&[]), &[(OpId::new("enc"), &calls[..])], false);
            assert_eq!(s.verdict, Verdict::Undetermined, "{calls:?}");
            assert!(s.notes[0].starts_with("timings not credible"), "{:?}", s.notes);
        }
    }

    #[test]
    fn a_claim_of_absence_says_what_it_cannot_see() {
        let iccs = |n| group("hash", GroupKind::IccsHash, "ICCS", n);
        let keccak = |n| group("keccak", GroupKind::Direct, "Keccak", n);
        let v = |st: &Static, groups: &[GroupShare]| survey_instance("x", st, &[(OpId::new("dec"), groups)], true);
        // ICCS-only with the wrapped Keccak dead: true of what was wrapped, and no more.
        let only = v(&compiled(&["Keccak"]), &[iccs(2), keccak(0)]);
        assert_eq!((only.verdict, only.notes.as_slice()), (Verdict::IccsOnly, &["Keccak dead".to_owned()][..]));
        assert_eq!(only.caveat.as_deref(), Some(UNSEEN));
        assert_eq!(v(&compiled(&[]), &[iccs(0)]).caveat.as_deref(), Some(UNSEEN), "none");
        // Mixed claims no absence; a bypass beside a dead family does.
        assert!(v(&compiled(&[]), &[iccs(1), keccak(1)]).caveat.is_none());
        assert!(v(&compiled(&["AES"]), &[iccs(0), keccak(1), group("aes", GroupKind::Direct, "AES", 0)])
            .caveat
            .is_some());
        let s = survey("t", "local", &[]);
        assert!(s.caveat.is_none());
    }

    fn timed(counts: Vec<crate::measure::bench::WrappedCount>, ticks: u64) -> Timed {
        let report: crate::measure::bench::DriverReport = serde_json::from_str(&format!(
            r#"{{"iterations":10,"ns":1000,"ticks":{ticks},"accounted_ns":2000,"counter":"tsc","counter_nominal_hz":0,"perf_errno":2,
               "baseline_rss_kib":1,"peak_rss_kib":1,"api_sizes":{{"pk":1,"sk":1,"ct":1,"ss":1}},
               "returned_sizes":{{"pk":1,"sk":1,"ct":1,"ss":1}}}}"#
        ))
        .unwrap();
        let report = crate::measure::bench::DriverReport { profile: counts, ..report };
        let trial = crate::measure::stats::Trial { iterations: 10, ns: 1000, ticks, disturbed: false, replaced: false };
        Timed {
            spec: crate::measure::stats::PlanSpec::quick(),
            plan: crate::measure::stats::Plan { iterations: 10, warmups: 0 },
            estimate: 100.0,
            calibration: Vec::new(),
            calibration_control: Vec::new(),
            slots: vec![vec![(trial, report)]],
            disturbed_total: 0,
            host_check: crate::evidence::schema::HostCheck::of(&[], 0),
            stack: None,
            per_call: None,
            budget: None,
        }
    }

    #[test]
    fn forged_counts_from_the_candidates_process_are_refused() {
        let spec = ProfileSpec {
            groups: vec![crate::compile::submission::Group {
                name: "hash".into(),
                kind: GroupKind::IccsHash,
                family: "ICCS".into(),
                symbols: vec!["pseudohash".into()],
            }],
        };
        let count =
            |symbol: &str, ticks| crate::measure::bench::WrappedCount { symbol: symbol.into(), calls: 20, ticks };
        let (ops, total, groups) = shares(&spec, &timed(vec![count("pseudohash", 400)], 1000)).unwrap();
        assert_eq!((ops, total), (10, 1000));
        assert_eq!((groups[0].share, groups[0].symbols[0].calls_per_op), (0.4, 2.0));
        // Another symbol, more wrapped ticks than the operation had, an overflowing sum.
        assert!(shares(&spec, &timed(vec![count("pseudoXOF", 400)], 1000)).is_err());
        assert!(shares(&spec, &timed(vec![count("pseudohash", 1001)], 1000)).is_err());
        assert!(shares(&spec, &timed(vec![], 1000)).is_err());
        let two = ProfileSpec {
            groups: vec![crate::compile::submission::Group {
                symbols: vec!["a".into(), "b".into()],
                ..spec.groups[0].clone()
            }],
        };
        assert!(shares(&two, &timed(vec![count("a", u64::MAX), count("b", 2)], u64::MAX)).is_err());
    }

    #[test]
    fn only_calls_no_wrapper_covers_are_unseen() {
        // A library of this test's own: `hidden` calls `leaf` inside a.c, where --wrap
        // cannot redirect it; `outer` does too, but it is wrapped itself (nested: counted
        // once by design); b.c's calls cross objects and are wrapped.
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        std::fs::write(dir.join("a.c"), "int leaf(int x) { return x + 1; }\nint outer(int x) { return 2 * leaf(x); }\nint hidden(int x) { return leaf(x) + 3; }\n").unwrap();
        std::fs::write(
            dir.join("b.c"),
            "int leaf(int);\nint outer(int);\nint use(int x) { return outer(x) + leaf(x); }\n",
        )
        .unwrap();
        let profile_c = project::drivers_dir().join(recipe::PROFILE_DRIVER);
        let lib = dir.join("libx.so");
        let status = std::process::Command::new("gcc")
            .args(["-O2", "-fPIC", "-shared", "-DNGCC_PROFILE_SYMBOLS=X(0,leaf) X(1,outer)"])
            .args(["-Wl,--emit-relocs", "-Wl,--wrap=leaf", "-Wl,--wrap=outer", "-o", lib.as_str()])
            .args([dir.join("a.c").as_str(), dir.join("b.c").as_str(), profile_c.as_str()])
            .status()
            .expect("gcc (installed by .ci/run)");
        assert!(status.success());
        let spec = ProfileSpec {
            groups: vec![crate::compile::submission::Group {
                name: "g".into(),
                kind: GroupKind::Direct,
                family: "X".into(),
                symbols: vec!["leaf".into(), "outer".into()],
            }],
        };
        let st = inspect(&lib, &spec).unwrap();
        assert_eq!(st.unseen_call_sites, BTreeMap::from([("leaf".to_owned(), 1)]));
        assert_eq!(st.compiled_in.get("X").unwrap(), &["symbols: leaf, outer"]);
    }

    /// Build a profiling library of the test's own files (and the fixture's `keccak.c`
    /// unless one is given), wrapping `fixture_keccak_f1600`
    /// (family Keccak) and `hash` (family ICCS), and inspect it.
    fn inspect_built(files: &[(&str, &str)]) -> Static {
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let fixture = project::root().join("xtask/tests/fixture");
        let mut args: Vec<String> = vec![project::drivers_dir().join(recipe::PROFILE_DRIVER).into()];
        if !files.iter().any(|f| f.0 == "keccak.c") {
            args.push(fixture.join("keccak.c").into());
        }
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
            args.push(dir.join(name).into());
        }
        let lib = dir.join("libx.so");
        let status = std::process::Command::new("gcc")
            .args(["-O2", "-fPIC", "-shared", "-I", fixture.as_str()])
            .arg("-DNGCC_PROFILE_SYMBOLS=X(0,fixture_keccak_f1600) X(1,hash)")
            .args(["-Wl,--emit-relocs", "-Wl,--wrap=fixture_keccak_f1600", "-Wl,--wrap=hash", "-o", lib.as_str()])
            .args(&args)
            .status()
            .expect("gcc (installed by .ci/run)");
        assert!(status.success());
        let group = |name: &str, kind, family: &str, symbol: &str| crate::compile::submission::Group {
            name: name.into(),
            kind,
            family: family.into(),
            symbols: vec![symbol.into()],
        };
        let spec = ProfileSpec {
            groups: vec![
                group("keccak", GroupKind::Direct, "Keccak", "fixture_keccak_f1600"),
                group("hash", GroupKind::IccsHash, "ICCS", "hash"),
            ],
        };
        inspect(&lib, &spec).unwrap()
    }

    #[test]
    fn ways_around_the_wrappers_make_a_family_undetermined() {
        // Honest: the Keccak is called only through its wrapper, its constants only
        // from itself.
        let honest = "#include \"keccak.h\"\nvoid hash(uint64_t *s) { s[1] ^= 1; }\n\
                      void use(uint64_t *s) { fixture_keccak_f1600(s); }\n";
        let st = inspect_built(&[("u.c", honest)]);
        assert!(st.compiled_in.contains_key("Keccak"));
        assert!(st.unseen_call_sites.is_empty() && st.constants_outside.is_empty(), "{st:?}");
        // An alias of it, `__real_` from outside the wrappers, a call nested in another
        // family's wrapped function, and its address taken: four ways around.
        let keccak = std::fs::read_to_string(project::root().join("xtask/tests/fixture/keccak.c")).unwrap();
        // (The fixture's keccak.c defines `fixture_keccak_alias`, at the same address.)
        let around = "#include \"keccak.h\"\nvoid __real_fixture_keccak_f1600(uint64_t *);\n\
                      void a1(uint64_t *s) { fixture_keccak_alias(s); }\n\
                      void a2(uint64_t *s) { __real_fixture_keccak_f1600(s); }\n";
        let st = inspect_built(&[("u.c", around)]);
        assert_eq!(st.unseen_call_sites, BTreeMap::from([("fixture_keccak_f1600".to_owned(), 2)]), "{st:?}");
        let nested = "#include \"keccak.h\"\nvoid hash(uint64_t *s) { fixture_keccak_f1600(s); }\n";
        let st = inspect_built(&[("u.c", nested)]);
        assert_eq!(st.unseen_call_sites, BTreeMap::from([("fixture_keccak_f1600".to_owned(), 1)]), "{st:?}");
        let taken = format!("{keccak}void (*const keccak_ptr)(uint64_t *) = fixture_keccak_f1600;\n");
        let st = inspect_built(&[("keccak.c", &taken)]);
        assert_eq!(st.unseen_call_sites, BTreeMap::from([("fixture_keccak_f1600".to_owned(), 1)]), "{st:?}");
        // Its own copy of the permutation, with the round constants, outside any wrapper.
        let copy = keccak
            .replace("fixture_keccak_alias", "my_alias")
            .replace("fixture_keccak_f1600", "my_permutation")
            .replace("round_constants", "my_constants");
        let st = inspect_built(&[("copy.c", &copy)]);
        let why = st.constants_outside.get("Keccak").expect("constants outside the wrapped function");
        assert!(why.contains("my_constants is referred to at"), "{why}");
    }

    #[test]
    fn calls_are_shown_as_the_seed_pages_show_them() {
        let mut g = group("drng", GroupKind::IccsDrng, "ICCS", 106);
        g.symbols[0].calls_per_op = 10.6;
        let h = group("hash", GroupKind::IccsHash, "ICCS", 2);
        assert_eq!(calls_text(&[g, h]), "drng_fn 10.6, hash_fn 2");
        assert_eq!(calls_text(&[group("x", GroupKind::Direct, "AES", 0)]), "-");
    }
}
