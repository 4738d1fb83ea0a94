//! Figures the candidate's own process reports, forged from inside it as a hostile
//! submitter would (`tests/fixture/forge.h`, keccak aliases in `kem_body.c`): the
//! records stay honest, or are marked not credible by the host's CPU reading, and the
//! survey never calls a reachable Keccak dead.

mod common;

use common::fixture::*;
use common::{record, xtask};
use xtask::evidence::schema::{self, Credibility, ProfileRecord, Survey, Verdict};

const DEFAULT: &str = "#define _DEFAULT_SOURCE 1\n";

fn setup(tmp: &std::path::Path, insts: &[Inst]) -> (std::path::PathBuf, std::path::PathBuf) {
    write_tree(&tmp.join("tree"), insts);
    let zip = tmp.join("Fixture KEM v1.zip");
    zip_tree(&tmp.join("tree"), &zip);
    (manifest_dir(&tmp.join("m"), &zip, false, insts), zip)
}

fn run(cmd: &str, m: &std::path::Path, zip: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> bool {
    exit_code(cmd, m, zip, out, extra) == Some(0)
}

fn exit_code(
    cmd: &str,
    m: &std::path::Path,
    zip: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> Option<i32> {
    let base = [cmd, m.to_str().unwrap(), "--engine", "podman", "--archive", zip.to_str().unwrap(), "--quick"];
    let rest = ["--allow-unfixed-host", "--out", out.to_str().unwrap()];
    xtask(&[&base[..], &rest[..], extra].concat(), None).status.code()
}

#[test]
fn timing_reports_cannot_be_forged_from_the_candidates_process() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![
        ("fix-16", 16, String::new()),
        ("fix-dtor", 16, format!("{DEFAULT}#define FIX_FORGE 1\n#define FIX_FORGE_DTOR 1\n")),
        ("fix-slow", 16, "#define FIX_SLOW 1\n".into()),
        ("fix-clock", 16, format!("{DEFAULT}#define FIX_SLOW 1\n#define FIX_FORGE 1\n#define FIX_FORGE_CLOCK 1\n")),
        ("fix-stack", 16, format!("{DEFAULT}#define FIX_FORGE 1\n#define FIX_FORGE_STACK 1\n")),
        (
            "fix-burn",
            16,
            format!("{DEFAULT}#define FIX_FORGE 1\n#define FIX_FORGE_STACK 1\n#define FIX_FORGE_BURN 1\n"),
        ),
    ];
    let (m, zip) = setup(tmp.path(), &insts);
    let out = tmp.path().join("out");
    // The interposed clock_gettime no longer reaches the driver, which reads the
    // kernel's clock by a raw system call (drivers/rawsys.h): those records are honest.
    // The clock readings moved forward in the driver's own frames are not, and the
    // host's checks say so: the run fails on fix-stack and fix-burn.
    assert_eq!(exit_code("bench", &m, &zip, &out, &["--op", "keygen"]), Some(1));
    let rec = |label| record(&out, "fixture-kem", label, "keygen");
    for label in ["fix-16", "fix-dtor", "fix-slow", "fix-clock", "fix-stack", "fix-burn"] {
        let r = rec(label);
        let outside = r.trials.iter().map(|t| t.host_cpu_ns.unwrap_or(0) as f64 - t.accounted_ns as f64);
        eprintln!(
            "{label}: {:?} {:?} mean {:.0} ns; allowance {:?} ns; host - accounted per trial (ns): {:?}; probe {:?}",
            r.host_check.credibility,
            r.host_check.detail,
            r.aggregate.mean_ns,
            r.host_check.allowance_ns,
            outside.collect::<Vec<_>>(),
            r.host_check.probe
        );
        assert!(r.trials.iter().all(|t| t.host_cpu_ns.is_some()), "{label}: the host read every trial");
    }
    // The destructor that divides the buffered report's ns and ticks by 10 never runs.
    // It would leave accounted_ns, which holds the timed loop: both are clocked in one
    // process, so the machine's load moves them alike (unlike fix-dtor against fix-16).
    // Honest, the loop is most of what a trial accounts; forged, a tenth of it.
    let dtor = rec("fix-dtor");
    assert_eq!(dtor.host_check.credibility, Credibility::Checked);
    let share = dtor.trials.iter().map(|t| t.trial.ns as f64 / t.accounted_ns as f64).fold(0.0, f64::max);
    assert!(share > 0.3, "fix-dtor: the timed loop is at most {share:.2} of a trial's accounted time");
    // The clock it slowed 10x is the library's own: fix-clock times like fix-slow
    // (the same operation), not ten times faster.
    assert_eq!(rec("fix-slow").host_check.credibility, Credibility::Checked);
    let clock = rec("fix-clock");
    assert_eq!(clock.host_check.credibility, Credibility::Checked, "{:?}", clock.host_check);
    let ratio = rec("fix-slow").aggregate.mean_ns / clock.aggregate.mean_ns;
    assert!(ratio < 3.0, "fix-clock times {ratio:.1}x faster than the same operation in fix-slow");
    // A fast operation forged to a tenth: its trials are too short for the bound, so a
    // longer run is checked, and the host's CPU or its time per operation gives it away.
    let stack = rec("fix-stack");
    assert_eq!(stack.host_check.credibility, Credibility::NotCredible, "{:?}", stack.host_check);
    // Burning CPU in a constructor raises the allowance, and every trial as much: the
    // longer run grows with the allowance, and the forgery is still over the bound.
    let burn = rec("fix-burn");
    assert!(burn.host_check.allowance_ns > stack.host_check.allowance_ns, "{:?}", burn.host_check);
    assert_eq!(burn.host_check.credibility, Credibility::NotCredible, "{:?}", burn.host_check);
    assert_eq!(rec("fix-16").host_check.credibility, Credibility::Checked);
    let page = xtask(&["report", m.to_str().unwrap(), "--out", out.to_str().unwrap()], None);
    assert!(page.status.success());
    let page = std::fs::read_to_string(common::layout(&out).report("fixture-kem")).unwrap();
    assert!(page.contains("| fix-clock | keygen |"), "{page}");
    assert!(page.contains("| fix-dtor | keygen |") && page.contains("self-reported by the timing driver"));
}

fn survey_of(out: &std::path::Path) -> Survey {
    schema::read(&common::layout(out).survey("fixture-kem")).unwrap().unwrap()
}

fn keccak_calls(out: &std::path::Path, label: &str) -> f64 {
    let r: ProfileRecord = schema::read(&common::layout(out).profile("fixture-kem", label, "keygen")).unwrap().unwrap();
    r.groups.iter().flat_map(|g| &g.symbols).find(|s| s.symbol == "fixture_keccak_f1600").unwrap().calls_per_op
}

#[test]
fn the_survey_cannot_be_forged_from_the_candidates_process() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![
        ("fix-16", 16, String::new()),
        (
            "fix-dtor",
            16,
            format!("{DEFAULT}#define FIX_KECCAK_LIVE 1\n#define FIX_FORGE 1\n#define FIX_FORGE_DTOR 1\n"),
        ),
        ("fix-alias", 16, "#define FIX_KECCAK_ALIAS 1\n".into()),
        ("fix-real", 16, "#define FIX_KECCAK_REAL 1\n".into()),
    ];
    let (m, zip) = setup(tmp.path(), &insts);
    let out = tmp.path().join("out");
    assert!(run("profile", &m, &zip, &out, &["--op", "keygen"]));
    let survey = survey_of(&out);
    let of = |l: &str| survey.instances.iter().find(|i| i.label == l).unwrap().clone();
    for i in &survey.instances {
        eprintln!("{}: {} {:?}", i.label, i.verdict, i.notes);
    }
    // The destructor that zeroes the wrapped Keccak's calls never runs.
    assert_eq!(keccak_calls(&out, "fix-dtor"), 1.0);
    assert_eq!(of("fix-dtor").verdict, Verdict::Mixed);
    // Keccak reached around its wrapper: undetermined, never dead, never ICCS-only.
    for label in ["fix-alias", "fix-real"] {
        let s = of(label);
        assert_eq!(s.verdict, Verdict::Undetermined, "{label}: {:?}", s.notes);
        assert!(s.notes.iter().any(|n| n.starts_with("Keccak undetermined (")), "{label}: {:?}", s.notes);
        assert!(!s.notes.iter().any(|n| n.contains("Keccak dead")), "{label}: {:?}", s.notes);
    }
    assert_eq!(of("fix-16").verdict, Verdict::IccsOnly);
    assert!(of("fix-16").notes.contains(&"Keccak dead".to_owned()), "{:?}", of("fix-16").notes);
    assert_ne!(survey.verdict, Verdict::IccsOnly);
}

/// A library that asks which program it is in (`/proc/self/exe`, argv[0]) and is honest
/// only where the KAT text and the replay are made, a trivial KEM (pk = sk) where it is
/// timed: every run starts the one program with no argument, so it is the trivial KEM
/// in the KAT run too, and fails there. `fix-cpus` asks instead whether it may run on one
/// core only, as a pinned trial may: every container has one core, so it is the trivial
/// KEM in the KAT run too.
#[test]
fn a_library_asking_which_program_it_is_in_is_the_same_in_every_run() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![
        ("fix-16", 16, String::new()),
        ("fix-chameleon", 16, "#define FIX_CHAMELEON 1\n".into()),
        ("fix-cpus", 16, "#define FIX_CHAMELEON_CPUS 1\n".into()),
    ];
    let (m, zip) = setup(tmp.path(), &insts);
    let out = tmp.path().join("out");
    let (m, zip, o) = (m.to_str().unwrap(), zip.to_str().unwrap(), out.to_str().unwrap());
    let verify = xtask(&["verify", m, "--engine", "podman", "--archive", zip, "--out", o], None);
    assert_eq!(verify.status.code(), Some(1), "the chameleon fails the run");
    let s = common::summary(&out, "fixture-kem");
    assert_eq!(common::entry(&s, "fix-16").status.name(), "PASS");
    // Its trivial keys do not decapsulate: the KAT driver's own check stops it.
    assert_eq!(common::entry(&s, "fix-chameleon").status.name(), "CRYPTOFAIL");
    assert_eq!(common::entry(&s, "fix-cpus").status.name(), "CRYPTOFAIL", "one core in the KAT run too");
    // One program, one argv: the mode comes on stdin.
    let honest = common::entry(&s, "fix-16");
    assert_eq!(honest.run_command, ["/build/candidate", "<", "kat"], "{:?}", honest.run_command);
}

/// Two libraries that are slow (tens of ms a keygen) where their KAT text is made and
/// fast where they are timed. `fix-init` asks which process is its container's init
/// (`/proc/1/comm`): every run of the program, the KAT run included, is a trial of the
/// trial runner, so it is fast everywhere, and its figures are its own. `fix-pattern`
/// tells the runs apart after `main`, by the calls (a keygen after a keygen is a timing
/// trial's): its KAT text is right and its timed figures are another library's; the KAT
/// run's CPU, read by the host, is held against them, and they are not credible.
#[test]
fn a_library_fast_only_where_it_is_timed_is_not_credible() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![
        ("fix-16", 16, String::new()),
        ("fix-init", 16, "#define FIX_CHAMELEON_INIT 1\n".into()),
        ("fix-pattern", 16, "#define FIX_CHAMELEON_PATTERN 1\n".into()),
    ];
    let (m, zip) = setup(tmp.path(), &insts);
    let out = tmp.path().join("out");
    let (ms, zs, os) = (m.to_str().unwrap(), zip.to_str().unwrap(), out.to_str().unwrap());
    let verify = xtask(&["verify", ms, "--engine", "podman", "--archive", zs, "--out", os], None);
    assert!(verify.status.success(), "the same KAT text: PASS");
    let s = common::summary(&out, "fixture-kem");
    let kat_cpu = |label| common::entry(&s, label).kat_cpu_ns.expect("the host read the KAT run's CPU");
    let labels = ["fix-16", "fix-init", "fix-pattern"];
    eprintln!("KAT run CPU (ns): {:?}", labels.map(|l| (l, kat_cpu(l))));
    assert_eq!(exit_code("bench", &m, &zip, &out, &[]), Some(1), "fix-pattern's figures are not credible");
    for op in ["keygen", "enc", "dec"] {
        for label in ["fix-16", "fix-init"] {
            let r = record(&out, "fixture-kem", label, op);
            let check = r.host_check.kat_run.clone().expect("held against the KAT run");
            assert!(check.credible && r.host_check.credibility == Credibility::Checked, "{label}: {:?}", r.host_check);
        }
        let pattern = record(&out, "fixture-kem", "fix-pattern", op);
        eprintln!("fix-pattern {op}: {:?}", pattern.host_check);
        let check = pattern.host_check.kat_run.clone().expect("held against the KAT run");
        assert!(!check.credible && check.records == 10, "{check:?}");
        assert_eq!(pattern.host_check.credibility, Credibility::NotCredible);
        assert!(pattern.host_check.detail.as_deref().unwrap_or_default().contains("the KAT run of this library took"));
    }
    let evidence = xtask(&["evidence", "check", os], None);
    assert!(evidence.status.success(), "the rewritten records are indexed");
}
