//! A hostile submitter against the harness: fixture instances whose `kem_keygen`
//! attacks once (tests/fixture/hostile.h), run in the Debian 13 container. Each gets
//! the status the attack deserves, the host canary is byte-identical afterwards, no
//! connection reaches the host, no container is left, and no build folder changes
//! except by its own build. Then: a poisoned build cache, a FIFO header, and Ctrl-C.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;

use common::entry;
use common::fixture::*;
use xtask::container::engine::{Backend, Engine};
use xtask::evidence::schema::Summary;
use xtask::kat::verify::Status;
use xtask::sha::Sha256Hex;

/// The attacks of hostile.h, with the status each must get.
const ATTACKS: &[(&str, u32, &str)] = &[
    ("hx-plant", 1, "PASS"),
    ("hx-writes", 2, "PASS"),
    ("hx-sigkill", 3, "CRASH"),
    ("hx-oom", 4, "CRASH"),
    ("hx-flood", 5, "OUTPUTLIMIT"),
    ("hx-forkbomb", 6, "PASS"),
    ("hx-net", 7, "PASS"),
    ("hx-background", 8, "PASS"),
    ("hx-memfd-exec", 10, "PASS"),
    ("hx-execveat", 11, "PASS"),
    ("hx-host-files", 12, "PASS"),
    ("hx-dev-mounts", 13, "PASS"),
    // From the library's constructor: trapping rdtsc or installing a seccomp filter
    // (either would intercept the driver's raw clock), executable anonymous memory.
    ("hx-intercept", 14, "PASS"),
    ("hx-exec-memory", 15, "PASS"),
    // The control: its allowed write counts as a hit, so the attack code demonstrably
    // runs and a hit demonstrably changes the verdict.
    ("hx-control", 9, "CRYPTOFAIL"),
];

fn instances(canary: &Path, port: u16) -> Vec<Inst> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(host.trim().chars().all(|c| c.is_ascii_alphanumeric() || "-.".contains(c)), "{host}");
    let common = format!(
        "#define _DEFAULT_SOURCE 1\n#define HOSTILE_CANARY \"{}\"\n#define HOSTILE_PORT {port}\n\
         #define HOSTILE_FLOOD_MIB 8\n#define HOSTILE_HOST_NAME \"{}\"\n",
        canary.display(),
        host.trim()
    );
    let mut v: Vec<Inst> =
        ATTACKS.iter().map(|&(label, n, _)| (label, 16, format!("{common}#define FIX_HOSTILE {n}\n"))).collect();
    v.push(("fix-16", 16, String::new()));
    v.push(("fix-crash", 16, "#define FIX_CRASH 1\n".into()));
    v
}

struct Env {
    engine: &'static str,
    tmp: tempfile::TempDir,
    cache: PathBuf,
    out: PathBuf,
    manifest: PathBuf,
    zip: PathBuf,
}

impl Env {
    fn new(insts: &[Inst]) -> Env {
        Env::with_engine(insts, "podman")
    }

    fn with_engine(insts: &[Inst], engine: &'static str) -> Env {
        common::require_podman();
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("tree");
        write_tree(&tree, insts);
        let zip = tmp.path().join("Fixture KEM v1.zip");
        zip_tree(&tree, &zip);
        let manifest = manifest_dir(&tmp.path().join("m"), &zip, false, insts);
        Env { engine, cache: tmp.path().join("cache"), out: tmp.path().join("out"), manifest, zip, tmp }
    }

    /// `xtask verify <fixture> --archive ... <extra>` in a container, in its own
    /// process group; returns its pid and output.
    fn verify(&self, extra: &[&str]) -> (u32, Output) {
        let child = self.spawn_verify(extra);
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (pid, out)
    }

    fn spawn_verify(&self, extra: &[&str]) -> std::process::Child {
        self.spawn("verify", extra)
    }

    /// `verify` with a `podman` first on PATH that refuses every `run` and passes the
    /// rest to the real one: the engine fails while the tool works.
    fn verify_with_failing_engine(&self, extra: &[&str]) -> (u32, Output) {
        let real = String::from_utf8(Command::new("sh").args(["-c", "command -v podman"]).output().unwrap().stdout);
        let wrapper = self.tmp.path().join("engine");
        std::fs::create_dir_all(&wrapper).unwrap();
        let script = format!(
            "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = run ] && {{ echo 'simulated engine failure' >&2; exit 125; }}; done\nexec {} \"$@\"\n",
            real.unwrap().trim()
        );
        std::fs::write(wrapper.join("podman"), script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(wrapper.join("podman"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", wrapper.display(), std::env::var("PATH").unwrap());
        let child = self.spawn_env("verify", extra, &[("PATH", path.as_str())]);
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (pid, out)
    }

    /// `xtask <command> <fixture> --archive ... <extra>`, in its own process group.
    fn spawn(&self, command: &str, extra: &[&str]) -> std::process::Child {
        self.spawn_env(command, extra, &[])
    }

    fn spawn_env(&self, command: &str, extra: &[&str], vars: &[(&str, &str)]) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        let mut args: Vec<&str> = vec![command, self.manifest.to_str().unwrap(), "--engine", self.engine];
        args.extend(["--out", self.out.to_str().unwrap(), "--archive", self.zip.to_str().unwrap()]);
        args.extend(extra);
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(&args)
            .env("NGCC_CACHE", &self.cache)
            .envs(vars.iter().copied())
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn summary(&self) -> Summary {
        common::summary(&self.out, "fixture-kem")
    }

    fn evidence_ok(&self) -> bool {
        common::xtask(&["evidence", "check", self.out.to_str().unwrap()], None).status.success()
    }
}

/// The memory limit's kill, named as the engine reports it. An engine nested in a
/// container may see none (podman writes no `oom` file there); the tool then says the
/// engine reported none. On a machine of its own, the engine must name it.
fn oom_named(message: &str) -> bool {
    let nested = Path::new("/run/.containerenv").exists() || Path::new("/.dockerenv").exists();
    message.contains("out of memory (limit 512m)")
        || (nested && message.contains("killed by signal 9 (SIGKILL); the engine reported no out-of-memory kill"))
}

/// Every attack has its status, and the plain instance beside them passes.
fn assert_statuses<'a>(s: &Summary, attacks: impl Iterator<Item = &'a (&'static str, u32, &'static str)>) {
    let mut wrong = Vec::new();
    for &(label, _, want) in attacks {
        let message = entry(s, label).message.as_deref().unwrap_or_default();
        if entry(s, label).status.name() != want {
            wrong.push(format!("{label}: {} (want {want}): {message}", entry(s, label).status.name()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(entry(s, "fix-16").status, Status::Pass);
}

/// Containers this xtask process left behind.
fn leftover_containers(pid: u32) -> Vec<String> {
    let out = Command::new("podman").args(["ps", "-a", "--format", "{{.Names}}"]).output().unwrap();
    let prefix = format!("ngcc-repro-{pid}-");
    String::from_utf8_lossy(&out.stdout).lines().filter(|n| n.starts_with(&prefix)).map(str::to_owned).collect()
}

#[test]
fn hostile_instances_get_their_status_and_change_nothing_outside_their_sandbox() {
    let canary_dir = tempfile::tempdir().unwrap();
    let canary = canary_dir.path().join("canary.txt");
    let canary_text = format!("canary {:?}\n", Instant::now());
    std::fs::write(&canary, &canary_text).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let insts = instances(&canary, port);
    let env = Env::new(&insts);
    // Three instances at a time (--jobs): each is some ten short containers, mostly
    // waiting for the engine; every attack still runs in a sandbox of its own.
    let limits = ["--timeout", "30", "--memory", "512m", "--output-cap-mib", "4", "--jobs", "3"];

    let (pid, run) = env.verify(&limits);
    assert!(!run.status.success(), "crashing instances fail the run");
    let s = env.summary();
    assert_statuses(&s, ATTACKS.iter());
    let msg = |l: &str| entry(&s, l).message.clone().unwrap_or_default();
    assert!(msg("hx-sigkill").contains("killed by signal 9 (SIGKILL)"), "{}", msg("hx-sigkill"));
    assert!(oom_named(&msg("hx-oom")), "{}", msg("hx-oom"));
    assert!(msg("hx-flood").contains("output cap (4 MiB)"), "{}", msg("hx-flood"));
    assert!(entry(&s, "hx-flood").output_bytes.unwrap() > 4 << 20);
    assert_eq!(std::fs::metadata(env.out.join("local/kat/fixture-kem/hx-flood.log")).unwrap().len(), 4 << 20);
    // Children that outlive the program die with its container: no wait for them.
    for label in ["hx-background", "hx-forkbomb", "hx-plant"] {
        let secs = entry(&s, label).run_seconds.unwrap();
        assert!(secs < 20.0, "{label} ran {secs} s");
    }
    // Every KAT run and build step of the host's record names its digests.
    assert_eq!(entry(&s, "fix-16").library_sha256.as_ref().unwrap().len(), 64);
    assert_eq!(entry(&s, "fix-16").program_sha256.as_ref().unwrap().len(), 64);
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), canary_text, "the host canary changed");
    assert!(listener.accept().is_err(), "a sandboxed program reached the host's loopback");
    assert!(leftover_containers(pid).is_empty(), "{:?}", leftover_containers(pid));
    assert!(env.evidence_ok());

    // Nothing changed any build but its own: every build is reused as it is, which the
    // tool does only when every file still has the digest it took after the build.
    let (_, again) = env.verify(&limits);
    let s2 = env.summary();
    for i in &s2.instances {
        assert!(i.build_reused, "{}", i.label);
        assert_eq!(i.status, entry(&s, &i.label).status);
    }
    assert!(!String::from_utf8_lossy(&again.stdout).contains("rebuilt"));

    poisoned_cache_is_rebuilt(&env, &s, &s2, insts.len());

    // An engine that cannot run the command is a tool error, never a status, and
    // nothing recorded changes.
    let before = std::fs::read(env.out.join("local/kat/fixture-kem/summary.json")).unwrap();
    let index = std::fs::read(env.out.join("EVIDENCE.sha256")).unwrap();
    let (pid, broken) = env.verify_with_failing_engine(&["--rebuild"]);
    assert_eq!(broken.status.code(), Some(3), "an engine failure is the tool's, exit 3");
    let err = String::from_utf8_lossy(&broken.stderr);
    assert!(err.contains("podman") && err.contains("simulated engine failure"), "the engine's message is shown: {err}");
    assert_eq!(std::fs::read(env.out.join("local/kat/fixture-kem/summary.json")).unwrap(), before);
    assert_eq!(std::fs::read(env.out.join("EVIDENCE.sha256")).unwrap(), index);
    assert!(leftover_containers(pid).is_empty());
}

/// A poisoned cache: the crashing instance's build gets a passing instance's files.
fn poisoned_cache_is_rebuilt(env: &Env, s: &Summary, s2: &Summary, n: usize) {
    let limits = ["--timeout", "30", "--memory", "512m", "--output-cap-mib", "4"];
    let build_dir = |label: &str| {
        let key = entry(s, label).build_key.clone();
        env.cache.join("builds/fixture-kem").join(&key[..20]).join("out")
    };
    for f in ["libinstance.so", "candidate"] {
        let target = build_dir("fix-crash").join(f);
        std::fs::remove_file(&target).unwrap();
        std::fs::copy(build_dir("fix-16").join(f), &target).unwrap();
    }
    let (_, poisoned) = env.verify(&[&limits[..], &["--instance", "fix-crash"]].concat());
    let text = String::from_utf8_lossy(&poisoned.stdout);
    assert!(text.contains("fix-crash: rebuilt: the earlier build's files changed"), "{text}");
    let s3 = env.summary();
    assert_eq!(entry(&s3, "fix-crash").status, Status::Crash);
    assert!(!entry(&s3, "fix-crash").build_reused);
    // A partial run keeps every other instance's result.
    assert_eq!(s3.instances.len(), n);
    assert_eq!(entry(&s3, "hx-oom").finished, entry(s2, "hx-oom").finished);
    assert!(env.evidence_ok());
}

#[test]
fn the_docker_sandbox_names_faults_the_same_way() {
    let ok = Command::new("docker").arg("info").output().is_ok_and(|o| o.status.success());
    assert!(ok, "docker does not answer here: `cargo xtask doctor --engine docker` lists what to do");
    let canary_dir = tempfile::tempdir().unwrap();
    let canary = canary_dir.path().join("canary.txt");
    std::fs::write(&canary, "canary\n").unwrap();
    // Not hx-dev-mounts: docker's --volume has no nodev (README, "The sandbox").
    let keep = [
        "hx-writes",
        "hx-sigkill",
        "hx-oom",
        "hx-flood",
        "hx-background",
        "hx-memfd-exec",
        "hx-execveat",
        "hx-host-files",
        "hx-control",
        "fix-16",
    ];
    let insts: Vec<Inst> = instances(&canary, 9).into_iter().filter(|i| keep.contains(&i.0)).collect();
    let env = Env::with_engine(&insts, "docker");
    let (_, run) = env.verify(&["--timeout", "30", "--memory", "512m", "--output-cap-mib", "4"]);
    assert!(!run.status.success());
    let s = env.summary();
    assert_eq!(s.toolchain.engine, Backend::Container(Engine::Docker));
    assert_statuses(&s, ATTACKS.iter().filter(|a| keep.contains(&a.0)));
    let oom = entry(&s, "hx-oom").message.clone().unwrap();
    assert!(oom.contains("out of memory (limit 512m)"), "{oom}");
    assert!(entry(&s, "hx-background").run_seconds.unwrap() < 20.0);
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "canary\n");
    let left = Command::new("docker").args(["ps", "-aq", "--filter", "name=ngcc-repro-"]).output().unwrap();
    assert!(String::from_utf8_lossy(&left.stdout).trim().is_empty(), "containers left behind");
}

#[test]
fn a_fifo_in_the_source_tree_is_a_build_failure_at_once() {
    let insts: Vec<Inst> = vec![("hx-fifo", 16, "#include \"fifo.h\"\n".into())];
    let env = Env::new(&insts);
    let tree = env.tmp.path().join("tree-with-fifo");
    let root = write_tree(&tree, &insts);
    let fifo = std::ffi::CString::new(root.join("hx-fifo/fifo.h").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let t = Instant::now();
    let run = common::xtask(
        &[
            "verify",
            env.manifest.to_str().unwrap(),
            "--engine",
            "podman",
            "--out",
            env.out.to_str().unwrap(),
            "--source-dir",
            tree.to_str().unwrap(),
            "--build-timeout",
            "5",
        ],
        Some(&env.cache),
    );
    assert!(!run.status.success());
    let s = env.summary();
    assert_eq!(entry(&s, "hx-fifo").status, Status::Buildfail);
    // The FIFO never reaches the build: only regular files are copied into its inputs.
    let log = std::fs::read_to_string(env.out.join("local/kat/fixture-kem/hx-fifo.build.log")).unwrap();
    assert!(log.contains("left out of the build's inputs (not a regular file): hx-fifo/fifo.h"), "{log}");
    assert!(log.contains("fifo.h: No such file"), "{log}");
    assert!(t.elapsed() < Duration::from_secs(90));
}

/// Statuses and digests: what a resumed run must reproduce.
fn verdicts(s: &Summary) -> Vec<(String, Status, Option<Sha256Hex>)> {
    s.instances.iter().map(|i| (i.label.clone(), i.status, i.actual_sha256.clone())).collect()
}

#[test]
fn ctrl_c_records_nothing_unfinished_and_resume_finishes_the_job() {
    let insts: Vec<Inst> = [("fix-a", 16), ("fix-b", 20), ("fix-c", 24), ("fix-d", 28), ("fix-e", 12), ("fix-f", 40)]
        .into_iter()
        .map(|(l, n)| (l, n, String::new()))
        .collect();
    let reference = Env::new(&insts);
    let t = Instant::now();
    let (_, run) = reference.verify(&[]);
    assert!(run.status.success());
    let full = t.elapsed();
    let want = verdicts(&reference.summary());

    let env = Env::new(&insts);
    // Each round interrupts a fresh rebuild at another point of the run.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    for round in 0..3u32 {
        let fraction = 0.15 + 0.25 * f64::from(round) + f64::from(nanos % 100) / 1000.0;
        let child = env.spawn_verify(&["--rebuild"]);
        let pid = child.id();
        std::thread::sleep(full.mul_f64(fraction));
        // SAFETY: signals the process group the test made for the child.
        unsafe { libc::killpg(pid as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        eprintln!(
            "round {round} at {fraction:.2} of {full:?}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(matches!(out.status.code(), Some(130 | 0)), "{:?}", out.status);
        assert!(leftover_containers(pid).is_empty(), "{:?}", leftover_containers(pid));
        // An interrupted build is not kept: every build folder left is a finished one.
        if let Ok(builds) = std::fs::read_dir(env.cache.join("builds/fixture-kem")) {
            for b in builds.map(|b| b.unwrap().path()).filter(|b| b.is_dir()) {
                assert!(b.join("build.json").is_file(), "unfinished build kept: {}", b.display());
            }
        }
        if env.out.join("EVIDENCE.sha256").exists() {
            assert!(env.evidence_ok(), "an interrupted run left evidence that does not match its index");
        }
        if env.out.join("local/kat/fixture-kem/summary.json").exists() {
            let got = verdicts(&env.summary());
            for v in &got {
                assert!(want.contains(v), "interrupted run recorded {v:?}");
            }
        }
    }
    let (_, resumed) = env.verify(&["--resume"]);
    assert!(resumed.status.success());
    assert_eq!(verdicts(&env.summary()), want);
    assert!(env.evidence_ok());
}

/// Timing or profile records of the fixture under `dir` (`<label>__<op>.json`) written
/// at or after `since`, sorted.
fn op_records(dir: &Path, since: std::time::SystemTime) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap())
        .filter(|e| e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t >= since))
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.contains("__"))
        .collect();
    names.sort();
    names
}

/// Ctrl-C to the process group of `bench` and `profile` right after their first
/// record lands (the window between a record and its index), and again right after the
/// first record of the second instance, the second time over a finished run's
/// evidence: exit 130, no container left, and a set that checks against its index,
/// whose environment, size audit and survey match the records of the run (no stale
/// survey, none made from part of an instance).
#[test]
fn ctrl_c_during_bench_and_profile_leaves_evidence_that_checks() {
    let insts: Vec<Inst> = [("fix-a", 16), ("fix-b", 20)].into_iter().map(|(l, n)| (l, n, String::new())).collect();
    let env = Env::new(&insts);
    let layout = common::layout(&env.out);
    let args = ["--quick", "--allow-unfixed-host"];
    for (command, dir) in [("bench", layout.records_dir("fixture-kem")), ("profile", layout.profile_dir("fixture-kem"))]
    {
        let _ = std::fs::remove_dir_all(&env.out);
        for (round, wait_for) in [(0, 1), (1, 4)] {
            if round == 1 {
                // A finished run first: its survey and records are what the next must not mix with.
                assert!(env.spawn(command, &args).wait().unwrap().success());
            }
            let since = std::time::SystemTime::now();
            let child = env.spawn(command, &args);
            let pid = child.id();
            let t = Instant::now();
            while op_records(dir.as_std_path(), since).len() < wait_for && t.elapsed() < Duration::from_secs(900) {
                std::thread::sleep(Duration::from_millis(2));
            }
            // SAFETY: signals the process group the test made for the child.
            unsafe { libc::killpg(pid as i32, libc::SIGINT) };
            let out = child.wait_with_output().unwrap();
            let records = op_records(dir.as_std_path(), since);
            eprintln!("{command} round {round}: {:?}, records of the run {records:?}", out.status);
            assert!(matches!(out.status.code(), Some(130 | 0)), "{:?}", out.status);
            assert!(leftover_containers(pid).is_empty(), "{:?}", leftover_containers(pid));
            assert!(!records.is_empty());
            assert!(env.evidence_ok(), "{command} interrupted in round {round} left evidence unlike its index");
            let labels: Vec<&str> = records.iter().map(|r| r.split("__").next().unwrap()).collect();
            if command == "bench" {
                let environment: xtask::evidence::schema::Environment =
                    xtask::evidence::schema::read(&layout.environment("fixture-kem"))
                        .unwrap()
                        .expect("environment.json");
                assert!(layout.size_audit("fixture-kem").is_file());
                for r in &records {
                    let (label, op) = r.trim_end_matches(".json").split_once("__").unwrap();
                    let rec = common::record(&env.out, "fixture-kem", label, op);
                    assert_eq!(rec.environment.campaign_start, environment.campaign_start, "{r}");
                }
            } else {
                // The survey speaks for exactly the instances this run finished.
                let mut complete = labels.clone();
                complete.dedup();
                complete.retain(|l| labels.iter().filter(|m| *m == l).count() == 3);
                let survey: Option<xtask::evidence::schema::Survey> =
                    xtask::evidence::schema::read(&layout.survey("fixture-kem")).unwrap();
                let surveyed: Vec<String> = survey.iter().flat_map(|s| &s.instances).map(|i| i.label.clone()).collect();
                assert_eq!(surveyed, complete, "the survey speaks for exactly the complete instances of the run");
            }
        }
    }
}

/// Peak RSS of xtask, in KiB, from `/usr/bin/time -v`.
fn max_rss_kib(stderr: &str) -> u64 {
    let line = stderr.lines().find(|l| l.contains("Maximum resident set size")).expect("time -v output");
    line.rsplit(':').next().unwrap().trim().parse().unwrap()
}

#[test]
fn two_gib_of_output_leave_xtask_memory_bounded() {
    let header = "#define _DEFAULT_SOURCE 1\n#define HOSTILE_CANARY \"/nonexistent\"\n#define HOSTILE_PORT 9\n\
                  #define HOSTILE_FLOOD_MIB 2048\n#define FIX_HOSTILE 5\n";
    let insts: Vec<Inst> = vec![("hx-flood", 16, header.into())];
    let env = Env::new(&insts);
    // Killed at the default cap (256 MiB), then with the cap above 2 GiB so that all of
    // it streams through xtask into the log.
    for (cap, status) in [(None, "OUTPUTLIMIT"), (Some("3072"), "MISMATCH")] {
        let t = Instant::now();
        let mut args = vec!["verify", env.manifest.to_str().unwrap(), "--engine", "podman"];
        args.extend(["--out", env.out.to_str().unwrap(), "--archive", env.zip.to_str().unwrap()]);
        args.extend(cap.map(|c| ["--output-cap-mib", c]).iter().flatten());
        let out = Command::new("/usr/bin/time")
            .arg("-v")
            .arg(env!("CARGO_BIN_EXE_xtask"))
            .args(&args)
            .env("NGCC_CACHE", &env.cache)
            .output()
            .expect("/usr/bin/time (package time) runs xtask");
        let rss = max_rss_kib(&String::from_utf8_lossy(&out.stderr));
        let s = env.summary();
        let bytes = entry(&s, "hx-flood").output_bytes.unwrap();
        let log = std::fs::metadata(env.out.join("local/kat/fixture-kem/hx-flood.log")).unwrap().len();
        eprintln!("flood, cap {cap:?} MiB: peak RSS {rss} KiB, {bytes} bytes read, log {log} bytes, {:?}", t.elapsed());
        assert_eq!(entry(&s, "hx-flood").status.name(), status);
        match cap {
            None => assert!(bytes > 256 << 20 && log == 256 << 20),
            Some(_) => assert!(bytes > 2 << 30 && log == bytes),
        }
        assert!(rss < 200 * 1024, "peak RSS {rss} KiB");
    }
}

/// A `CMake` submission whose configure step (its own code, run with the build folder
/// writable) attacks per instance; and a KAT program that tries to run a copy of itself
/// from /tmp.
const CMAKE_LISTS: &str = r#"cmake_minimum_required(VERSION 3.13)
project(hostile_build C)
execute_process(COMMAND sh ${CMAKE_SOURCE_DIR}/evil/${EVIL}.sh WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
if(EVIL STREQUAL "hb-prebuilt")
  file(COPY ${CMAKE_SOURCE_DIR}/shipped/kat DESTINATION ${CMAKE_BINARY_DIR})
  add_custom_target(kat ALL COMMAND true)
else()
  add_executable(kat kat.c)
  if(EVIL STREQUAL "hb-tmpexec")
    target_compile_definitions(kat PRIVATE TMPEXEC=1)
  endif()
endif()
"#;

const KAT_C: &str = r#"#define _DEFAULT_SOURCE 1
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
#ifdef TMPEXEC
    if (argc < 2) {
        char buf[1 << 16];
        size_t n;
        FILE *in = fopen(argv[0], "rb"), *out = fopen("/tmp/k", "wb");
        while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
        if (out) fclose(out);
        chmod("/tmp/k", 0755);
        execl("/tmp/k", "/tmp/k", "again", (char *)0);
        return 7; /* /tmp is noexec: this is where it must end */
    }
#endif
    (void)argc; (void)argv;
    printf("Count = 0\nK = 00\n");
    return 0;
}
"#;

const EVIL: &[(&str, &str, &str)] = &[
    ("hb-clean", "", "PASS"),
    ("hb-nonutf8", "printf x > \"$(printf 'bad\\377name')\"\n", "BUILDFAIL"),
    ("hb-suid", "cp /bin/sh who && chmod 6755 who; mkdir open && chmod 1777 open; chmod 777 .\n", "PASS"),
    ("hb-disk", "i=0; while [ $i -lt 200 ]; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); done\n", "BUILDFAIL"),
    ("hb-prebuilt", "", "BUILDFAIL"),
    ("hb-tmpexec", "", "CRYPTOFAIL"),
];

fn cmake_submission(dir: &Path) -> (PathBuf, PathBuf) {
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("evil")).unwrap();
    std::fs::create_dir_all(tree.join("shipped")).unwrap();
    std::fs::write(tree.join("CMakeLists.txt"), CMAKE_LISTS).unwrap();
    std::fs::write(tree.join("kat.c"), KAT_C).unwrap();
    std::fs::write(tree.join("shipped/kat"), "#!/bin/sh\nprintf 'Count = 0\\nK = 00\\n'\n").unwrap();
    for (label, script, _) in EVIL {
        std::fs::write(tree.join(format!("evil/{label}.sh")), script).unwrap();
    }
    let zip = dir.join("hostile-build.zip");
    zip_tree(&tree, &zip);
    let sha = common::sha256(&std::fs::read(&zip).unwrap());
    let bytes = std::fs::metadata(&zip).unwrap().len();
    let mut m = format!(
        "id = \"hostile-build\"\nname = \"hostile build (test)\"\n[source]\nkind = \"archive\"\nfile = \"hostile-build.zip\"\n\
         bytes = {bytes}\nsha256 = \"{sha}\"\n[build.cmake]\nconfigure = [\"-DEVIL={{label}}\"]\ntarget = \"kat\"\n\
         [kat]\nrun = [\"kat\"]\nfile = \"kat.txt\"\n"
    );
    let digest = common::sha256(b"Count = 0\nK = 00\n");
    let mut kat = String::new();
    for (label, _, _) in EVIL {
        m.push_str(&format!("[[instance]]\nlabel = \"{label}\"\ndir = \".\"\n"));
        kat.push_str(&format!("{digest} raw {label}/kat.txt\n"));
    }
    let mdir = dir.join("m");
    std::fs::create_dir_all(mdir.join("hostile-build")).unwrap();
    std::fs::write(mdir.join("hostile-build.toml"), m).unwrap();
    std::fs::write(mdir.join("hostile-build/kat.sha256"), kat).unwrap();
    (mdir.join("hostile-build.toml"), zip)
}

#[test]
fn hostile_build_steps_are_contained_and_their_output_taken_back() {
    common::require_podman();
    let tmp = tempfile::tempdir().unwrap();
    let (manifest, zip) = cmake_submission(tmp.path());
    let (cache, out) = (tmp.path().join("cache"), tmp.path().join("out"));
    let run = common::xtask(
        &[
            "verify",
            manifest.to_str().unwrap(),
            "--engine",
            "podman",
            "--archive",
            zip.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--build-disk-mib",
            "16",
        ],
        Some(&cache),
    );
    assert_eq!(run.status.code(), Some(1), "bad instances fail the run; none stops it");
    let s = common::summary(&out, "hostile-build");
    for (label, _, want) in EVIL {
        assert_eq!(
            entry(&s, label).status.name(),
            *want,
            "{label}: {}",
            entry(&s, label).message.as_deref().unwrap_or_default()
        );
    }
    let msg = |l: &str| entry(&s, l).message.clone().unwrap();
    assert!(msg("hb-nonutf8").contains("a file name that is not UTF-8"), "{}", msg("hb-nonutf8"));
    assert!(msg("hb-disk").contains("wrote more than 16 MiB"), "{}", msg("hb-disk"));
    assert!(msg("hb-prebuilt").contains("not built by the pinned toolchain"), "{}", msg("hb-prebuilt"));
    // What the builds left is the tool's again: no set-id or sticky bits, nothing
    // writable by others, no file of the sandbox user.
    use std::os::unix::fs::MetadataExt;
    for e in walkdir::WalkDir::new(cache.join("builds")).into_iter().map(|e| e.unwrap()) {
        let meta = e.path().symlink_metadata().unwrap();
        if meta.file_type().is_symlink() {
            continue;
        }
        assert_eq!(meta.mode() & 0o7022, 0, "{} has mode {:o}", e.path().display(), meta.mode());
        assert_ne!(meta.uid(), 65534, "{} still belongs to the sandbox user", e.path().display());
    }
}
