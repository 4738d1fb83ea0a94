//! The "Sanitizers" section of a page, from `sanitize` records (none: no section).

use std::fmt::Write as _;

use anyhow::Result;

use crate::evidence::schema::{SanRunVerdict, SanitizeRecord};
use crate::pages::md;

/// Findings shown per instance; the record has them all.
const SHOWN: usize = 5;

/// The site's cell for one instance: its status, and its findings when it has any.
pub fn cell(records: &[SanitizeRecord], label: &str) -> String {
    match records.iter().find(|r| r.label == label) {
        None => "not run".into(),
        Some(r) if r.findings.is_empty() => r.status.as_str().to_owned(),
        Some(r) => format!("{} ({} finding(s))", r.status.as_str(), r.findings.len()),
    }
}

pub fn section(w: &mut String, records: &[SanitizeRecord]) -> Result<()> {
    let Some(first) = records.first() else { return Ok(()) };
    writeln!(w, "\n## Sanitizers\n")?;
    writeln!(
        w,
        "Method: each instance built with `{}` added to every compiler command, in the image of {}; its KAT \
         program ran with the published digest checked, then the family's checks on inputs drawn at run time. \
         The runtimes halt at their first report and exit with the tool's own code ({}), set in the \
         environment (`{}`); a report is read only from a run that ended with that code, and a run that did \
         without a readable report is a failure, never clean.\n",
        first.flags.join(" "),
        md(&first.toolchain.toolchain),
        first.exit_code,
        first.options.iter().map(|o| md(o)).collect::<Vec<_>>().join("`, `")
    )?;
    writeln!(
        w,
        "Limits: only the paths these runs took are seen, and each run stops at its first report; leaks are not \
         checked; the candidate's code shares its process with the runtimes and can silence them (the hooks it \
         defines or calls and `no_sanitize` in its sources are listed, and make a run without findings \
         undetermined). Not run under qemu-user emulation, where AddressSanitizer does not work.\n"
    )?;
    writeln!(w, "| instance | status | findings | runs | KAT digest under the sanitizers |\n|---|---|---|---|---|")?;
    for r in records {
        let kat = r.runs.iter().filter(|x| x.run.starts_with("kat")).map(|x| match x.verdict {
            SanRunVerdict::Clean if x.expected_sha256.is_some() => "matches",
            SanRunVerdict::Clean => "not checked",
            SanRunVerdict::Mismatch => "differs",
            SanRunVerdict::Report | SanRunVerdict::Unreadable => "stopped by a sanitizer",
            SanRunVerdict::Failed => "run failed",
        });
        let kat: Vec<&str> = kat.collect();
        writeln!(
            w,
            "| {} | {} | {} | {} | {} |",
            md(&r.label),
            r.status.as_str(),
            r.findings.len(),
            r.runs.len(),
            if kat.is_empty() { "no KAT run".to_owned() } else { kat.join(", ") }
        )?;
    }
    for r in records.iter().filter(|r| r.detail.is_some() || !r.findings.is_empty()) {
        writeln!(w, "\n### {} ({})\n", md(&r.label), r.status.as_str())?;
        if let Some(d) = &r.detail {
            writeln!(w, "- {}", md(&crate::project::last_lines(d, 6).replace('\n', " ")))?;
        }
        for f in r.findings.iter().take(SHOWN) {
            writeln!(
                w,
                "- {} {} ({}) at `{}:{}` in `{}`{}; runs: {}",
                md(&f.sanitizer),
                md(&f.kind),
                md(&f.what),
                md(&f.at.file),
                f.at.line,
                md(&f.at.function),
                f.entry.as_ref().map_or(String::new(), |e| format!(", called through `{}`", md(e))),
                md(&f.runs.join(", "))
            )?;
        }
        if r.findings.len() > SHOWN {
            writeln!(w, "- … {} more in the record", r.findings.len() - SHOWN)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::schema::{CtFrame, SanFinding, SanStatus, Summary};

    #[test]
    fn the_site_cell_names_the_status_and_counts_findings() {
        let golden: Summary = serde_json::from_str(include_str!("../../tests/golden/summary.json")).unwrap();
        let finding = SanFinding {
            sanitizer: "AddressSanitizer".into(),
            kind: "heap-buffer-overflow".into(),
            what: String::new(),
            at: CtFrame { function: "f".into(), file: "a.c".into(), line: 3 },
            entry: None,
            runs: vec!["kat".into()],
            stack: vec![],
        };
        let rec = SanitizeRecord {
            schema: 1,
            id: "x".into(),
            label: "a".into(),
            system: "local".into(),
            status: SanStatus::Findings,
            detail: None,
            flags: vec![],
            options: vec![],
            exit_code: 86,
            runs: vec![],
            checks: vec![],
            findings: vec![finding],
            hooks: vec![],
            toolchain: golden.toolchain,
            build_key: "k".into(),
            library_sha256: "l".into(),
            harness_commit: "c".into(),
            started: "s".into(),
            finished: "f".into(),
        };
        assert_eq!(cell(std::slice::from_ref(&rec), "a"), "findings (1 finding(s))");
        assert_eq!(cell(std::slice::from_ref(&rec), "b"), "not run");
        let clean = SanitizeRecord { status: SanStatus::Clean, findings: vec![], ..rec };
        assert_eq!(cell(&[clean], "a"), "clean");
    }
}
