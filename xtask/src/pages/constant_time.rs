//! The "Constant time" section of a page and the site's column, from `ct` records.

use std::fmt::Write as _;

use anyhow::Result;

use crate::evidence::schema::{CtFinding, CtFrame, CtKind, CtRecord, CtStatus, CtTimingStatus};
use crate::family::Family;
use crate::pages::md;

/// Findings shown per operation; the record has them all.
const SHOWN: usize = 5;

pub fn section(w: &mut String, family: &Family, records: &[CtRecord]) -> Result<()> {
    let Some(ct) = family.ct else { return Ok(()) };
    writeln!(w, "\n## Constant time\n")?;
    let Some(first) = records.first() else {
        writeln!(w, "Not checked: run `cargo xtask ct`.")?;
        return Ok(());
    };
    let secrets: Vec<String> = ct.ops.iter().map(|o| format!("{} {}", o.id, o.secrets)).collect();
    writeln!(
        w,
        "Method: each secret-handling operation ran under valgrind's memcheck ({}, in the analysis image of {}) \
         with its secrets marked undefined ({}), {} runs on their own DRNG seeds; public outputs are declassified \
         when the call returns. The build is the guide build with debug information (`-g`). A finding is a \
         conditional branch, a memory address or a system-call argument computed from a secret, at its line in \
         the submission's tree.\n",
        md(&first.analysis.valgrind_version),
        md(&first.toolchain.toolchain),
        secrets.join("; "),
        first.runs
    )?;
    writeln!(
        w,
        "Limits: only the paths these runs took are seen; stock memcheck does not see variable-time instructions \
         (division); cache-line effects of addresses that look public are not seen; a library can mark its \
         secrets defined (its valgrind client requests are counted). No finding is no proof of constant time. \
         Branches the compiler introduced are seen: the binary is tested.\n"
    )?;
    writeln!(w, "| instance | operation | status | findings | secret bytes | DRNG bytes | memcheck wall |\n|---|---|---|---|---|---|---|")?;
    for r in records {
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {:.1} s |",
            md(&r.label),
            r.op.name(),
            r.status.as_str(),
            r.findings.len(),
            r.secret_bytes,
            r.random_bytes,
            r.wall_s
        )?;
    }
    declassified(w, records)?;
    timing(w, records)?;
    for r in records.iter().filter(|r| r.detail.is_some() || !r.findings.is_empty()) {
        writeln!(w, "\n### {} {} ({})\n", md(&r.label), r.op.name(), r.status.as_str())?;
        if let Some(d) = &r.detail {
            writeln!(w, "- {}", md(d))?;
        }
        let places = by_location(&r.findings);
        for place in places.iter().take(SHOWN) {
            writeln!(w, "- {}", place.text())?;
        }
        if places.len() > SHOWN {
            writeln!(w, "- … {} more location(s) in the record", places.len() - SHOWN)?;
        }
    }
    Ok(())
}

/// What the manifests declare public in each instance's secret key, once per instance.
fn declassified(w: &mut String, records: &[CtRecord]) -> Result<()> {
    let mut labels: Vec<&str> = records.iter().map(|r| r.label.as_str()).collect();
    labels.dedup();
    for label in labels {
        // Key ranges hold for every operation, public-derived values for one: all of them.
        let mut all: Vec<String> = Vec::new();
        for d in records.iter().filter(|r| r.label == label).flat_map(|r| &r.declassified) {
            if !all.contains(&md(d)) {
                all.push(md(d));
            }
        }
        if !all.is_empty() {
            writeln!(w, "\nDeclassified by the manifest for {}: {}.", md(label), all.join("; "))?;
        }
    }
    Ok(())
}

/// The timing tests' table, when any operation had one.
fn timing(w: &mut String, records: &[CtRecord]) -> Result<()> {
    let timed: Vec<(&CtRecord, &crate::evidence::schema::CtTiming)> =
        records.iter().filter_map(|r| r.timing.as_ref().map(|t| (r, t))).collect();
    let Some((_, first)) = timed.first() else { return Ok(()) };
    writeln!(
        w,
        "\nTiming test (dudect-style, for decapsulation and for every operation with a finding): {}; the two \
         classes interleaved at random. Clock: {}. t is Welch's, the largest |t| of the first-order test on all \
         measurements, on percentile crops and of the second-order test; {}. A low t is no proof of constant \
         time: only these inputs, on this machine, were timed.\n",
        md(&first.classes),
        md(&first.clock),
        crate::measure::stats::margin_rule()
    )?;
    writeln!(
        w,
        "| instance | operation | timing | t | test of the largest \\|t\\| | measurements (class 0 / 1) | mean class 0 | mean class 1 |\n|---|---|---|---|---|---|---|---|"
    )?;
    for (r, t) in &timed {
        let figures = !matches!(t.status, CtTimingStatus::NotRun | CtTimingStatus::Failed | CtTimingStatus::NotEnough);
        let (tv, n, m0, m1) = if figures {
            let ns = |v: f64| crate::pages::forms::time(v);
            (format!("{:.2}", t.t), format!("{} / {}", t.n[0], t.n[1]), ns(t.mean_ns[0]), ns(t.mean_ns[1]))
        } else {
            ("–".into(), "–".into(), "–".into(), "–".into())
        };
        let (label, op, test) = (md(&r.label), r.op.name(), md(&t.test));
        writeln!(w, "| {label} | {op} | {} | {tv} | {test} | {n} | {m0} | {m1} |", t.status.as_str())?;
    }
    budgets(w, &timed)?;
    for (r, t) in &timed {
        if let Some(d) = &t.detail {
            writeln!(w, "\n- {} {} timing: {}", md(&r.label), r.op.name(), md(d))?;
        }
    }
    Ok(())
}

/// The time budgets the tests ran within, and the measurements each allowed.
fn budgets(w: &mut String, timed: &[(&CtRecord, &crate::evidence::schema::CtTiming)]) -> Result<()> {
    let with: Vec<_> = timed.iter().filter_map(|(r, t)| t.budget.as_ref().map(|b| (r, b))).collect();
    let Some((_, first)) = with.first() else { return Ok(()) };
    writeln!(
        w,
        "\nTime budgets ({}): each test's measurements are what fit in its budget at the cost of one, learned \
         from a first batch of {} by the trial runner's clock and capped by `--measurements`; fewer than {} (or a \
         run that outlasted {}x its share) is \"{}\", no verdict either way.\n",
        md(&first.source),
        crate::ct::timing::CALIBRATION,
        crate::ct::timing::MIN_MEASUREMENTS,
        crate::ct::timing::OVERRUN,
        CtTimingStatus::NotEnough.as_str()
    )?;
    writeln!(w, "| instance | operation | budget | per measurement | allowed |\n|---|---|---|---|---|")?;
    for (r, b) in with {
        let ns = |v: f64| crate::pages::forms::time(v);
        let allowed = if b.enough { b.allowed.to_string() } else { format!("{}: not enough", b.allowed) };
        writeln!(
            w,
            "| {} | {} | {} | {} | {allowed} |",
            md(&r.label),
            r.op.name(),
            ns(b.seconds * 1e9),
            ns(b.unit_ns)
        )?;
    }
    Ok(())
}

/// Call sites shown per location; the record has them all.
const SITES: usize = 3;

/// One location of a finding (kind, file and line) over all the stacks that reached
/// it: the summed count, and where the candidate's own code called into it.
struct Place<'a> {
    kind: CtKind,
    at: &'a CtFrame,
    count: u64,
    /// (file, line, function) of the calling line in the candidate's tree, summed count.
    callers: Vec<(&'a CtFrame, u64)>,
}

impl Place<'_> {
    fn text(&self) -> String {
        let at = format!(
            "{} at `{}:{}` in `{}` ×{}",
            self.kind.as_str(),
            md(&self.at.file),
            self.at.line,
            md(&self.at.function),
            self.count
        );
        if self.callers.is_empty() {
            return at;
        }
        let sites: Vec<String> = self
            .callers
            .iter()
            .take(SITES)
            .map(|(c, n)| format!("`{}:{}` in `{}` ×{n}", md(&c.file), c.line, md(&c.function)))
            .collect();
        let more = match self.callers.len().saturating_sub(SITES) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!("{at}, called at {}{more}", sites.join("; "))
    }
}

/// Findings grouped by location (kind, file, line) with their counts summed, most
/// frequent first; each with the lines of the candidate's code that called the
/// function it is in (the first frame of another function in its tree).
fn by_location(findings: &[CtFinding]) -> Vec<Place<'_>> {
    let mut places: Vec<Place> = Vec::new();
    for f in findings {
        let i = match places.iter().position(|p| p.kind == f.kind && p.at.file == f.at.file && p.at.line == f.at.line) {
            Some(i) => i,
            None => {
                places.push(Place { kind: f.kind, at: &f.at, count: 0, callers: Vec::new() });
                places.len() - 1
            }
        };
        let place = &mut places[i];
        place.count += f.count;
        if let Some(c) = caller(f) {
            match place.callers.iter_mut().find(|(k, _)| k.file == c.file && k.line == c.line) {
                Some((_, n)) => *n += f.count,
                None => place.callers.push((c, f.count)),
            }
        }
    }
    for p in &mut places {
        p.callers.sort_by_key(|c| std::cmp::Reverse(c.1));
    }
    places.sort_by_key(|p| std::cmp::Reverse(p.count));
    places
}

/// The line in the candidate's tree that called the function a finding is in.
fn caller(f: &CtFinding) -> Option<&CtFrame> {
    let from = f.stack.iter().position(|s| *s == f.at).map_or(0, |i| i + 1);
    f.stack[from..].iter().find(|s| s.function != f.at.function && crate::ct::memcheck::is_candidate(s))
}

/// The site's cell for one instance: its distinct findings over the operations checked.
pub fn cell(records: &[CtRecord], label: &str) -> String {
    let mine: Vec<&CtRecord> = records.iter().filter(|r| r.label == label).collect();
    if mine.is_empty() {
        return "not checked".into();
    }
    let n: usize = mine.iter().map(|r| r.findings.len()).sum();
    let open: Vec<&str> = mine
        .iter()
        .filter(|r| matches!(r.status, CtStatus::Failed | CtStatus::Undetermined | CtStatus::NothingPoisoned))
        .map(|r| r.op.name())
        .collect();
    let mut head = if n == 0 { format!("none found ({} ops)", mine.len()) } else { format!("{n} finding(s)") };
    for status in [CtTimingStatus::Differs, CtTimingStatus::Inconclusive, CtTimingStatus::NotEnough] {
        let ops: Vec<&str> = mine
            .iter()
            .filter(|r| r.timing.as_ref().is_some_and(|t| t.status == status))
            .map(|r| r.op.name())
            .collect();
        if !ops.is_empty() {
            head = format!("{head}; {}: {}", status.as_str(), ops.join(", "));
        }
    }
    if open.is_empty() {
        head
    } else {
        format!("{head}; no conclusion: {}", open.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: &str, file: &str, line: u32) -> CtFrame {
        CtFrame { function: function.into(), file: file.into(), line }
    }

    /// A secret index dereferenced in a helper, reached on two stacks from one line of
    /// the decoder and on a third from another; a branch elsewhere.
    fn findings() -> Vec<CtFinding> {
        let helper = frame("rbc_elt_set_mask1", "src/rbc_elt.c", 91);
        let stack = |caller: CtFrame, n: u64| CtFinding {
            kind: CtKind::Index,
            at: helper.clone(),
            stack: vec![helper.clone(), caller, frame("main", "driver:kem_ct.c", 73)],
            count: n,
            what: "Use of uninitialised value of size 8".into(),
        };
        let decode = |line| frame("rbc_gabidulin_decode", "src/gabidulin.c", line);
        let branch = CtFinding {
            kind: CtKind::Branch,
            at: frame("qpoly_mul", "src/qpoly.c", 121),
            stack: vec![frame("memcmp", "/usr/lib/libc.so.6", 0), frame("qpoly_mul", "src/qpoly.c", 121)],
            count: 8,
            what: "Conditional jump or move depends on uninitialised value(s)".into(),
        };
        vec![stack(decode(196), 30), branch, stack(decode(196), 12), stack(decode(240), 5)]
    }

    #[test]
    fn findings_are_grouped_by_location_with_the_calling_line() {
        let f = findings();
        let lines: Vec<String> = by_location(&f).iter().map(Place::text).collect();
        assert_eq!(
            lines,
            [
                "secret-dependent memory index at `src/rbc_elt.c:91` in `rbc_elt_set_mask1` ×47, called at \
                 `src/gabidulin.c:196` in `rbc_gabidulin_decode` ×42; `src/gabidulin.c:240` in \
                 `rbc_gabidulin_decode` ×5",
                "secret-dependent branch at `src/qpoly.c:121` in `qpoly_mul` ×8",
            ]
        );
    }

    #[test]
    fn a_page_names_each_location_once_under_a_heading() {
        let golden = crate::project::root().join("xtask/tests/golden/ct_record.json");
        let mut r: CtRecord = crate::evidence::schema::read(&golden).unwrap().unwrap();
        r.findings = findings();
        let mut page = String::new();
        section(&mut page, &crate::family::KEM, std::slice::from_ref(&r)).unwrap();
        assert_eq!(page.matches("`src/rbc_elt.c:91`").count(), 1, "{page}");
        assert!(page.contains(&format!("\n### {} {} (", r.label, r.op.name())), "{page}");
        assert!(!page.contains("**"), "{page}");
    }
}
