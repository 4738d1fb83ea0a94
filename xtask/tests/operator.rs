//! What an operator and a script meet before any work starts: distinct exit codes,
//! values checked (with the valid choices and the nearest one) before any engine is
//! called, every missing archive named at once, `--json` on stdout; and where a
//! candidate's code may run when no engine works. No container: a fake `podman` and
//! `docker` on PATH record every call and fail, as engines that do not work here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::fixture::{manifest_dir, write_tree, zip_tree, Inst};
use xtask::evidence::schema::ErrorReport;

/// A PATH whose `podman` and `docker` only log that they were called.
struct FakeEngines {
    dir: tempfile::TempDir,
    /// `NGCC_CACHE` of the runs, when not the tool's default.
    cache: Option<PathBuf>,
}

impl FakeEngines {
    fn new() -> FakeEngines {
        let dir = tempfile::tempdir().unwrap();
        for engine in ["podman", "docker"] {
            let path = dir.path().join(engine);
            let log = dir.path().join("calls");
            std::fs::write(&path, format!("#!/bin/sh\necho \"{engine} $*\" >> '{}'\nexit 1\n", log.display())).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        FakeEngines { dir, cache: None }
    }

    /// The same, running on `c`'s own cache, in which nothing else builds.
    fn on(c: &Candidate) -> FakeEngines {
        FakeEngines { cache: Some(c.cache()), ..FakeEngines::new() }
    }

    fn run(&self, args: &[&str]) -> Output {
        let path = format!("{}:{}", self.dir.path().display(), std::env::var("PATH").unwrap());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.args(args).env("PATH", path);
        if let Some(cache) = &self.cache {
            cmd.env("NGCC_CACHE", cache);
        }
        let out = cmd.output().unwrap();
        eprintln!("$ xtask {}\n{}{}", args.join(" "), common::stdout(&out), String::from_utf8_lossy(&out.stderr));
        out
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("calls")).unwrap_or_default()
    }

    /// Refused with exit 2, a message containing every `needles`, and no engine call.
    fn refused(&self, args: &[&str], needles: &[&str]) {
        let out = self.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: no {n:?} in {err}");
        }
        assert_eq!(self.calls(), "", "{args:?} called an engine before refusing");
    }
}

fn tmp_out(tmp: &Path) -> PathBuf {
    tmp.join("never-made")
}

#[test]
fn wrong_values_exit_2_before_any_engine_is_called_with_the_nearest_choice() {
    let f = FakeEngines::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp_out(tmp.path());
    let out_s = out.to_str().unwrap();
    let e = ["--engine", "podman", "--out", out_s];
    f.refused(
        &[&["verify", "pqclean-ml-kem", "--instance", "ML-KEM-51"], &e[..]].concat(),
        &["ML-KEM-51", "did you mean `ML-KEM-512`?", "ML-KEM-1024, ML-KEM-512, ML-KEM-768"],
    );
    f.refused(
        &[&["verify", "kem-7"], &e[..]].concat(),
        &["did you mean `kem-07`?", "known: baseline-hash, hash-01..35, kem-01..41, kex-01..09"],
    );
    f.refused(&[&["bench", "pqclean-ml-kem", "--op", "kegen"], &e[..]].concat(), &["did you mean `keygen`?"]);
    f.refused(&[&["bench", "pqclean-ml-dsa", "--op", "enc"], &e[..]].concat(), &["keygen, sign, verify, sign_msgs"]);
    f.refused(&[&["verify", "--system", "arm1"], &e[..]].concat(), &["did you mean `arm_1`?"]);
    f.refused(&[&["verify", "pqclean-ml-kem", "--memory", "5x"], &e[..]].concat(), &["not a size"]);
    f.refused(&[&["verify", "pqclean-ml-kem", "--toolchain", "debian13"], &e[..]].concat(), &["`debian-13`"]);
    f.refused(
        &["campaign", "kem-07", "--engine", "podman", "--out", out_s, "--archive", "kem-03=x.zip"],
        &["not selected"],
    );
    f.refused(&["image", "build", "debian-13", "--engine", "host"], &["needs a container engine"]);
    assert!(!out.exists(), "a refused run leaves no --out behind");

    // --out naming a file: said plainly, and the file is untouched.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "mine").unwrap();
    f.refused(
        &["verify", "pqclean-ml-kem", "--engine", "podman", "--out", file.to_str().unwrap()],
        &["is not a folder"],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

#[test]
fn every_missing_archive_is_named_at_once_in_verify_and_campaign() {
    let f = FakeEngines::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp_out(tmp.path());
    for cmd in ["verify", "campaign"] {
        let args = [cmd, "--system", "arm_1", "--engine", "podman", "--out", out.to_str().unwrap()];
        let needles = [
            // arm_1's third candidate, kem-07, is x86-64 only (manifest): not built, not looked for.
            "2 archive(s) missing",
            "BAG-Loong.zip (16321958 bytes, SHA-256 2795fd57d3d00791652256362b4a21982116d3aad1fb63633dac923e0e76e05b)",
            "BAG-Piglet.zip (10529983 bytes",
            "published at https://",
            "--archive ID=PATH",
        ];
        f.refused(&args, &needles);
    }
    assert!(!out.exists());
}

#[test]
fn a_dry_run_says_every_step_and_missing_archive_without_an_engine() {
    let f = FakeEngines::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp_out(tmp.path());
    let args = ["campaign", "pqclean-ml-kem", "kem-03", "kem-07", "--system", "arm_1", "--engine", "podman"];
    let run = f.run(&[&args[..], &["--dry-run", "--out", out.to_str().unwrap()]].concat());
    assert_eq!(run.status.code(), Some(2), "a missing archive: campaign's exit");
    let text = common::stdout(&run);
    for line in [
        "campaign --dry-run on arm_1 (aarch64, toolchain ubuntu-26.04, engine podman)",
        "  image\n",
        "  verify pqclean-ml-kem\n  bench pqclean-ml-kem ML-KEM-512\n  bench pqclean-ml-kem ML-KEM-768\n",
        "  bench pqclean-ml-kem ML-KEM-1024\n  profile pqclean-ml-kem\n  ct pqclean-ml-kem\n",
        "  ct timing pqclean-ml-kem ML-KEM-512\n  ct timing pqclean-ml-kem ML-KEM-768\n",
        "  verify kem-03: skipped, its archive is missing",
        "  verify kem-07: skipped, every instance is built on other architectures only (manifest)",
        "missing (1):\n  - kem-03 needs its archive BAG-Loong.zip (16321958 bytes, SHA-256 2795fd57",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
    assert_eq!(f.calls(), "", "a dry run calls no engine");
    assert!(!out.exists(), "and writes no evidence");

    // The same as JSON; nothing missing: exit 0.
    let run = f.run(&[&args[..], &["--dry-run", "--no-ct", "--json", "--out", out.to_str().unwrap()]].concat());
    let report: xtask::evidence::schema::CampaignReport = serde_json::from_slice(&run.stdout).unwrap();
    let step = |name: &str| report.steps.iter().find(|s| s.step == name).unwrap();
    assert_eq!(
        (step("bench pqclean-ml-kem ML-KEM-768").outcome.as_str(), step("ct pqclean-ml-kem").outcome.as_str()),
        ("planned", "skipped")
    );
    assert_eq!(step("ct pqclean-ml-kem").detail.as_deref(), Some("--no-ct"));
    assert_eq!(report.missing.len(), 1);
    let run = f.run(&["campaign", "pqclean-ml-kem", "--engine", "podman", "--dry-run", "--out", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0));
    assert_eq!(f.calls(), "");
}

/// The dry run's estimate: priors on a fresh cache, a cost learned here once one is kept.
#[test]
fn a_dry_run_estimates_the_wall_time_from_priors_then_from_costs_learned_here() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let f = FakeEngines { cache: Some(cache.clone()), ..FakeEngines::new() };
    let out = tmp_out(tmp.path());
    let args = ["campaign", "pqclean-ml-kem", "--engine", "podman", "--dry-run", "--no-ct", "--no-sanitize"];
    let args = [&args[..], &["--no-profile", "--jobs", "2", "--timing-cores", "0", "--out"]].concat();
    let run = f.run(&[&args[..], &[out.to_str().unwrap()]].concat());
    assert_eq!(run.status.code(), Some(0));
    let text = common::stdout(&run);
    // Image 300 s, then 3 verifies of 60 s over 2 jobs (90 s) and 3 x 3 operations of 30 s
    // on one timing core (270 s).
    let line =
        "about 9 min 30 s of wall time for 7 task(s), set by the timed work (bench, profile, ct's timing test) over 1 timing cores";
    assert!(text.contains("estimate (no campaign step has finished here yet") && text.contains(line), "{text}");
    std::fs::create_dir_all(cache.join("durations")).unwrap();
    std::fs::write(cache.join("durations/campaign-unit-bench"), "1.0\n").unwrap();
    let run = f.run(&[&args[..], &[out.to_str().unwrap()]].concat());
    let text = common::stdout(&run);
    let line =
        "about 6 min 30 s of wall time for 7 task(s), set by the untimed work (verify, ct's memcheck, sanitize) over 2 jobs";
    assert!(text.contains("estimate (costs learned here for bench; priors for") && text.contains(line), "{text}");
    assert_eq!(f.calls(), "", "an estimate calls no engine");
    let written = std::fs::read_dir(&out).map_or(0, Iterator::count);
    assert_eq!(written, 0, "and writes no evidence");
}

#[test]
fn results_usage_and_failures_have_distinct_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    std::fs::create_dir_all(dir.join("local")).unwrap();
    std::fs::write(dir.join("local/a.json"), "{}").unwrap();
    let d = dir.to_str().unwrap();
    assert_eq!(common::xtask(&["evidence", "index", d], None).status.code(), Some(0));
    assert_eq!(common::xtask(&["evidence", "check", d], None).status.code(), Some(0));
    std::fs::write(dir.join("local/a.json"), "{\"x\":1}").unwrap();
    let changed = common::xtask(&["evidence", "check", d], None);
    assert_eq!(changed.status.code(), Some(1), "evidence not matching its index is a finding");
    // A folder nobody can create (not even root): the machine refused, exit 3.
    let f = FakeEngines::new();
    let out = f.run(&["verify", "pqclean-ml-kem", "--engine", "podman", "--out", "/proc/ngcc-out"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    // clap's own usage errors are 2 as well.
    assert_eq!(common::xtask(&["verify", "--no-such-flag"], None).status.code(), Some(2));
    let help = common::xtask(&["--help"], None);
    let text = common::stdout(&help);
    assert!(text.contains("Usage: cargo xtask") && text.contains("130 interrupted"), "{text}");
}

#[test]
fn json_goes_to_stdout_alone_and_parses_back() {
    #[derive(serde::Deserialize)]
    struct Listing {
        submissions: Vec<Listed>,
    }
    #[derive(serde::Deserialize)]
    struct Listed {
        id: String,
    }
    let list = common::xtask(&["list", "--json"], None);
    let listing: Listing = serde_json::from_slice(&list.stdout).expect("list --json is JSON");
    assert!(listing.submissions.iter().any(|s| s.id == "pqclean-ml-dsa"));
    // A refusal under --json is still one JSON document on stdout, with its exit code.
    let f = FakeEngines::new();
    let out = f.run(&["verify", "kem-7", "--engine", "podman", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let e: ErrorReport = serde_json::from_slice(&out.stdout).expect("the error is JSON");
    assert_eq!(e.exit_code, 2);
    assert!(e.error.contains("did you mean `kem-07`?"), "{}", e.error);
    // -q says nothing on success but the JSON.
    let quiet = common::xtask(&["list", "--json", "-q"], None);
    assert!(quiet.stderr.is_empty());
    serde_json::from_slice::<Listing>(&quiet.stdout).unwrap();
}

/// The fixture candidate, one instance, whose every process appends a line to a marker
/// file as it starts (a library constructor): proof of whether its code ran.
struct Candidate {
    tmp: tempfile::TempDir,
    manifest: PathBuf,
    zip: PathBuf,
    /// The evidence folder of its runs.
    out: PathBuf,
}

impl Candidate {
    fn new() -> Candidate {
        let tmp = tempfile::tempdir().unwrap();
        let marker = tmp.path().join("candidate-ran");
        let constructor = format!(
            "#include <stdio.h>\nstatic void __attribute__((constructor)) fixture_ran(void) {{ FILE *f = \
             fopen(\"{}\", \"a\"); if (f) {{ fputs(\"ran\\n\", f); fclose(f); }} }}\n",
            marker.display()
        );
        let insts: Vec<Inst> = vec![("fix-16", 16, constructor)];
        write_tree(&tmp.path().join("tree"), &insts);
        let zip = tmp.path().join("Fixture KEM v1.zip");
        zip_tree(&tmp.path().join("tree"), &zip);
        let manifest = manifest_dir(&tmp.path().join("m"), &zip, false, &insts);
        let out = tmp.path().join("out");
        Candidate { tmp, manifest, zip, out }
    }

    fn cache(&self) -> PathBuf {
        self.tmp.path().join("cache")
    }

    fn ran(&self) -> bool {
        self.tmp.path().join("candidate-ran").exists()
    }

    /// `cmd` on this candidate's manifest and archive, with `extra`.
    fn args<'a>(&'a self, cmd: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let (m, z, o) = (self.manifest.to_str().unwrap(), self.zip.to_str().unwrap(), self.out.to_str().unwrap());
        let mut args = vec![cmd, m, "--archive", z, "--out", o];
        args.extend(extra);
        args
    }

    /// No build folder in the cache, no line from the candidate, no KAT summary.
    fn untouched(&self, what: &str) {
        assert!(!self.cache().join("builds").exists(), "{what}: a build was made");
        assert!(!self.ran(), "{what}: the candidate's code ran");
        assert!(!common::layout(&self.out).kat_summary("fixture-kem").exists(), "{what}: a result was recorded");
    }
}

#[test]
fn without_a_working_engine_nothing_is_built_and_doctor_says_what_to_install() {
    let c = Candidate::new();
    let f = FakeEngines::on(&c);
    let bench = ["--quick", "--allow-unfixed-host"];
    for (cmd, extra) in [("verify", &[][..]), ("bench", &bench[..]), ("campaign", &bench[..])] {
        let out = f.run(&c.args(cmd, extra));
        // A campaign says each step's failure as it goes, on stdout.
        let text = format!("{}{}", common::stdout(&out), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(3), "{cmd}: {text}");
        for needle in ["no working container engine", "never falls back to the host", "cargo xtask doctor"] {
            assert!(text.contains(needle), "{cmd}: no {needle:?} in {text}");
        }
        // Each engine, with what is missing and the command that installs or starts it.
        for engine in ["podman", "docker"] {
            let miss = format!("{engine} MISS engine");
            let at = text.lines().position(|l| l.contains(&miss)).unwrap_or_else(|| panic!("{cmd}: no {miss}: {text}"));
            assert!(text.lines().nth(at).unwrap().contains(&format!("`{engine} info` fails")), "{text}");
            assert!(text.lines().nth(at + 1).unwrap().contains("fix: "), "{text}");
        }
        assert!(text.contains("podman runc catatonit uidmap"), "{cmd}: {text}");
        c.untouched(cmd);
    }
    // The engines were asked whether they work, and nothing else.
    let calls = f.calls();
    assert!(calls.lines().all(|l| l.ends_with(" info")), "{calls}");
    assert!(calls.contains("podman") && calls.contains("docker"), "{calls}");
}

#[test]
fn the_host_runs_an_archive_only_when_the_operator_says_so() {
    let c = Candidate::new();
    let f = FakeEngines::on(&c);
    for cmd in ["verify", "bench", "campaign"] {
        f.refused(&c.args(cmd, &["--engine", "host"]), &["--unsandboxed-host", "fixture-kem", "without any sandbox"]);
        c.untouched(cmd);
    }
    // A folder is a submission's source as well, even for a pinned crate's manifest.
    let dir = c.tmp.path().join("tree");
    let dir = dir.to_str().unwrap();
    let folder =
        ["verify", "pqclean-ml-kem", "--engine", "host", "--source-dir", dir, "--out", c.out.to_str().unwrap()];
    f.refused(&folder, &["pqclean-ml-kem", "--unsandboxed-host"]);
    // The flag allows the host and nothing else.
    f.refused(&c.args("verify", &["--unsandboxed-host"]), &["--unsandboxed-host goes with --engine host"]);
    c.untouched("--unsandboxed-host alone");

    // Said: it runs, on the host, and every record says so.
    let out = f.run(&c.args("verify", &["--engine", "host", "--unsandboxed-host"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("without any sandbox"), "{err}");
    assert!(common::stdout(&out).contains("host (unpinned, unsandboxed) PASS"), "{}", common::stdout(&out));
    let s = common::summary(&c.out, "fixture-kem");
    assert_eq!(s.toolchain.toolchain, "host (unpinned, unsandboxed)");
    assert!(!s.toolchain.pinned && s.toolchain.image.is_none());
    assert!(c.ran(), "the acknowledged host run ran the candidate's code");
    assert_eq!(f.calls(), "", "the host backend calls no engine");
    let help = common::stdout(&f.run(&["verify", "--help"]));
    assert!(help.contains("--unsandboxed-host") && help.contains("as you, with no container, no isolation"), "{help}");
}

#[test]
fn onboard_never_runs_a_draft_on_the_host() {
    let c = Candidate::new();
    let f = FakeEngines::on(&c);
    let drafts = c.tmp.path().join("drafts");
    let (zip, dir, out) = (c.zip.to_str().unwrap(), drafts.to_str().unwrap(), c.out.to_str().unwrap());
    // There is no acknowledgement for onboard: the flag is not one of its own.
    for (ack, needle) in [(&[][..], "--engine host is refused"), (&["--unsandboxed-host"], "unexpected argument")] {
        let args = [&["onboard", zip, "--dir", dir, "--out", out, "--engine", "host"][..], ack].concat();
        let run = f.run(&args);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!drafts.exists(), "a refused onboard writes no draft");
        assert!(!c.cache().join("builds").exists() && !c.ran());
    }
    // `auto` without an engine: the draft is written, nothing of it is built or run.
    let run = f.run(&["onboard", zip, "--dir", dir, "--out", out]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(3), "{err}");
    assert!(err.contains("no working container engine") && err.contains("cargo xtask doctor"), "{err}");
    assert!(drafts.join("fixture-kem-v1.toml").is_file());
    assert!(!c.cache().join("builds").exists() && !c.ran());
    assert!(common::stdout(&run).contains("the draft was not judged"), "{}", common::stdout(&run));
}

/// `list` says which candidates' archives are in the folder verify looks in (or
/// `--archives DIR`, the caller's path): by pinned name and size, never reading them; a
/// file of another size is named as not the pinned file, a link as refused; counts and
/// states are in `--json` too.
#[test]
fn list_says_which_archives_are_here_by_name_and_size() {
    use xtask::compile::submission::{SourceSpec, Submission};
    let archive = |id: &str| match Submission::load(id).unwrap().source {
        SourceSpec::Archive { file, bytes, .. } => (file, bytes),
        SourceSpec::Crate { .. } => panic!("{id} is pinned by an archive"),
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("dl");
    std::fs::create_dir(&dir).unwrap();
    // kem-03: the pinned name and size (sparse: its bytes are not read); kem-07: the pinned
    // name, another size; kem-04: a link at the pinned name.
    let (loong, loong_bytes) = archive("kem-03");
    std::fs::File::create(dir.join(&loong)).unwrap().set_len(loong_bytes).unwrap();
    let (brqc, brqc_bytes) = archive("kem-07");
    std::fs::write(dir.join(&brqc), b"not BRQC").unwrap();
    let (piglet, _) = archive("kem-04");
    std::os::unix::fs::symlink(dir.join(&loong), dir.join(&piglet)).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).current_dir(tmp.path()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let text = common::stdout(&run(&["list", "--archives", "dl"]));
    let of = |id: &str| {
        let at = text.lines().position(|l| l.starts_with(&format!("  {id:<16} "))).expect(id);
        text.lines().skip(at).take(5).find(|l| l.trim_start().starts_with("archive: ")).unwrap().trim().to_owned()
    };
    let d = dir.to_str().unwrap();
    assert_eq!(of("kem-03"), format!("archive: present ({d}/{loong}, the pinned size; SHA-256 checked when used)"));
    assert_eq!(
        of("kem-07"),
        format!("archive: present, size differs ({d}/{brqc} has 8 bytes, the pin {brqc_bytes}): not the pinned file")
    );
    assert!(of("kem-04").starts_with("archive: present, not a regular file ("), "{}", of("kem-04"));
    let (file, _) = archive("kem-01");
    assert_eq!(of("kem-01"), format!("archive: missing (looked for {d}/{file})"));
    let n = text.lines().filter(|l| l.trim_start().starts_with("archive: ")).count();
    let summary = format!(
        "Archives in {d}/: 1 of {n} candidates present, 2 present but not the pinned file, {} missing; the ICCS API \
         package API_PKC.zip (",
        n - 3
    );
    assert!(text.contains(&summary), "{summary}\n{text}");
    assert!(text.contains("names and sizes only: verify and campaign check each SHA-256"), "{text}");

    #[derive(serde::Deserialize)]
    struct Listing {
        archives: Archives,
        submissions: Vec<Listed>,
    }
    #[derive(serde::Deserialize)]
    struct Archives {
        candidates: usize,
        present: usize,
        not_pinned: usize,
        missing: usize,
    }
    #[derive(serde::Deserialize)]
    struct Listed {
        id: String,
        archive: Option<Here>,
    }
    #[derive(serde::Deserialize)]
    struct Here {
        state: String,
        found_bytes: Option<u64>,
    }
    let listing: Listing = serde_json::from_slice(&run(&["--json", "list", "--archives", "dl"]).stdout).unwrap();
    let a = &listing.archives;
    assert_eq!((a.candidates, a.present, a.not_pinned, a.missing), (n, 1, 2, n - 3));
    let state = |id: &str| {
        let h = listing.submissions.iter().find(|s| s.id == id).unwrap().archive.as_ref().unwrap();
        (h.state.clone(), h.found_bytes)
    };
    assert_eq!(state("kem-03"), ("present".into(), Some(loong_bytes)));
    assert_eq!(state("kem-07"), ("size-differs".into(), Some(8)));
    assert_eq!(state("kem-04"), ("not-a-file".into(), None));
    assert_eq!(state("kem-01").0, "missing");
    assert!(listing.submissions.iter().find(|s| s.id == "pqclean-ml-kem").unwrap().archive.is_none(), "a crate");
}
