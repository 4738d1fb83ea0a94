//! Evidence sets that try to make a reader open something else: a `summary.json` that
//! is a link to a file outside the set, a link to `/dev/zero`, and a sparse 1.5 GB
//! summary. `evidence check` names each as a defect, and `site`, `report` and
//! `compare` refuse the set at once, without following or reading the file. Built
//! from the golden files; no container.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const SUMMARY: &str = "local/kat/pqclean-ml-kem/summary.json";
/// Only the file outside the set says this; the page shows the KAT manifest digest it names.
const MARKER: &str = "KAT-MANIFEST-OUTSIDE-THE-SET";
const MANIFEST_SHA256: &str = "f0b894bc06e3235970448f971238fda6a1656e5fc801da9764d4b8c3854cf083";

/// `xtask args...`, killed after 60 s: a reader that follows `/dev/zero` never ends.
fn xtask_bounded(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("xtask {args:?} still reading after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    eprintln!("$ xtask {}\n{}{}", args.join(" "), common::stdout(&out), String::from_utf8_lossy(&out.stderr));
    out
}

fn golden_summary() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/summary.json")).unwrap()
}

/// An indexed evidence set holding the golden summary; returns its root.
fn evidence_set(dir: &Path) -> PathBuf {
    let out = dir.join("out");
    std::fs::create_dir_all(out.join(SUMMARY).parent().unwrap()).unwrap();
    std::fs::write(out.join(SUMMARY), golden_summary()).unwrap();
    assert!(xtask_bounded(&["evidence", "index", out.to_str().unwrap()]).status.success());
    out
}

fn site(out: &Path, site: &Path) -> Output {
    xtask_bounded(&["site", out.to_str().unwrap(), "--out", site.to_str().unwrap()])
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_summary_linked_outside_the_set_is_a_defect_and_is_never_rendered() {
    let tmp = tempfile::tempdir().unwrap();
    let out = evidence_set(tmp.path());
    let outside = tmp.path().join("outside.json");
    std::fs::write(&outside, golden_summary().replace(MANIFEST_SHA256, MARKER)).unwrap();
    // The control: the same text inside the set is rendered, marker and all.
    std::fs::copy(&outside, out.join(SUMMARY)).unwrap();
    xtask::evidence::write_index(camino::Utf8Path::from_path(&out).unwrap()).unwrap();
    let control = tmp.path().join("control-site");
    assert!(site(&out, &control).status.success());
    let page = std::fs::read_to_string(control.join("local/pqclean-ml-kem.md")).unwrap();
    assert!(page.contains(MARKER), "the control page shows the summary's KAT manifest digest");

    std::fs::remove_file(out.join(SUMMARY)).unwrap();
    std::os::unix::fs::symlink(&outside, out.join(SUMMARY)).unwrap();
    let check = xtask_bounded(&["evidence", "check", out.to_str().unwrap()]);
    assert!(!check.status.success());
    assert!(common::stdout(&check).contains(&format!("refused  {SUMMARY}: a link")), "{}", common::stdout(&check));
    let attacked = tmp.path().join("site");
    let s = site(&out, &attacked);
    assert!(!s.status.success() && stderr(&s).contains(&format!("{SUMMARY}: a link")), "{}", stderr(&s));
    let rendered: Vec<_> =
        walk(&attacked).into_iter().filter(|f| std::fs::read_to_string(f).unwrap().contains(MARKER)).collect();
    assert!(rendered.is_empty(), "the outside file was rendered into {rendered:?}");
    let r = xtask_bounded(&["report", "pqclean-ml-kem", "--out", out.to_str().unwrap()]);
    assert!(!r.status.success() && stderr(&r).contains("a link"), "{}", stderr(&r));
    // Indexing does not bless the link either.
    let index = xtask_bounded(&["evidence", "index", out.to_str().unwrap()]);
    assert!(!index.status.success() && stderr(&index).contains("a link"), "{}", stderr(&index));

    // A linked folder is followed no more than a linked file.
    std::fs::remove_file(out.join(SUMMARY)).unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::copy(&outside, elsewhere.join("summary.json")).unwrap();
    std::fs::remove_dir(out.join("local/kat/pqclean-ml-kem")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("local/kat/pqclean-ml-kem")).unwrap();
    let check = xtask_bounded(&["evidence", "check", out.to_str().unwrap()]);
    assert!(common::stdout(&check).contains("refused  local/kat/pqclean-ml-kem: a link"), "{}", common::stdout(&check));
    assert!(!site(&out, &tmp.path().join("site2")).status.success());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files = Vec::new();
    for e in entries.map(|e| e.unwrap().path()) {
        if e.is_dir() {
            files.extend(walk(&e));
        } else {
            files.push(e);
        }
    }
    files
}

#[test]
fn a_summary_linked_to_dev_zero_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let out = evidence_set(tmp.path());
    std::fs::remove_file(out.join(SUMMARY)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", out.join(SUMMARY)).unwrap();
    let check = xtask_bounded(&["evidence", "check", out.to_str().unwrap()]);
    assert!(common::stdout(&check).contains(&format!("refused  {SUMMARY}: a link")), "{}", common::stdout(&check));
    let s = site(&out, &tmp.path().join("site"));
    assert!(!s.status.success() && stderr(&s).contains(&format!("{SUMMARY}: a link")), "{}", stderr(&s));
    let c = xtask_bounded(&["compare", out.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(!c.status.success() && stderr(&c).contains("a link"), "{}", stderr(&c));
}

#[test]
fn a_sparse_gigabyte_summary_is_refused_by_its_size_unread() {
    let tmp = tempfile::tempdir().unwrap();
    let out = evidence_set(tmp.path());
    let len: u64 = 1536 << 20;
    std::fs::OpenOptions::new().write(true).open(out.join(SUMMARY)).unwrap().set_len(len).unwrap();
    let check = xtask_bounded(&["evidence", "check", out.to_str().unwrap()]);
    assert!(!check.status.success());
    let want = format!("refused  {SUMMARY}: {len} bytes, more than the");
    assert!(common::stdout(&check).contains(&want), "{}", common::stdout(&check));
    let s = site(&out, &tmp.path().join("site"));
    assert!(!s.status.success() && stderr(&s).contains(&format!("{SUMMARY}: {len} bytes")), "{}", stderr(&s));
}

#[test]
fn markup_in_evidence_text_stays_inside_its_table_cell() {
    let tmp = tempfile::tempdir().unwrap();
    let out = evidence_set(tmp.path());
    let hostile = "X | PASS | `code` *b* <i>";
    let text = golden_summary().replacen("\"label\": \"ML-KEM-512\"", &format!("\"label\": {hostile:?}"), 1);
    std::fs::write(out.join(SUMMARY), text).unwrap();
    assert!(xtask_bounded(&["evidence", "index", out.to_str().unwrap()]).status.success());
    let s = tmp.path().join("site");
    assert!(site(&out, &s).status.success());
    let md = std::fs::read_to_string(s.join("local/pqclean-ml-kem.md")).unwrap();
    assert!(md.contains("| X \\| PASS \\| \\`code\\` \\*b\\* \\<i\\> | guide | PASS |"), "{md}");
    let html = std::fs::read_to_string(s.join("local/pqclean-ml-kem.html")).unwrap();
    assert!(html.contains("<tr><td>X | PASS | `code` *b* &lt;i&gt;</td><td>guide</td><td>PASS</td></tr>"), "{html}");
}

#[test]
fn a_system_name_that_climbs_out_of_the_evidence_set_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // Evidence where `--out x/y/out --system ../../evil` would point: x/evil.
    let evil = tmp.path().join("x/evil/kat/pqclean-ml-kem");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("summary.json"), golden_summary()).unwrap();
    let out = tmp.path().join("x/y/out");
    std::fs::create_dir_all(&out).unwrap();
    let r = xtask_bounded(&["report", "pqclean-ml-kem", "--out", out.to_str().unwrap(), "--system", "../../evil"]);
    assert!(!r.status.success() && stderr(&r).contains("\"../../evil\" holds '/'"), "{}", stderr(&r));
    assert!(!tmp.path().join("x/evil/report").exists(), "a page was written outside --out");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "nothing written into --out either");
    let v = xtask_bounded(&["verify", "pqclean-ml-kem", "--out", out.to_str().unwrap(), "--system", "../../evil"]);
    assert!(!v.status.success() && stderr(&v).contains("\"../../evil\" holds '/'"), "{}", stderr(&v));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}
