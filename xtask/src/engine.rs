//! Container engines and the sandbox every untrusted command runs in.
//!
//! Every engine call goes through [`Engine::call`], which adds the command line
//! and the engine's stderr to any error. A [`Sandbox`] owns its container: it is
//! removed on drop and on Ctrl-C.

use std::process::Output;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::Serialize;
use xshell::{cmd, Shell};

use crate::flags::EngineChoice;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Podman,
    Docker,
}

/// Where untrusted commands run; recorded as `podman`, `docker` or `host`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum Backend {
    Container(Engine),
    /// The host's own compilers: nothing is pinned or isolated.
    Host,
}

impl From<Backend> for String {
    fn from(b: Backend) -> String {
        match b {
            Backend::Container(e) => e.program().to_owned(),
            Backend::Host => "host".to_owned(),
        }
    }
}

impl Backend {
    pub fn select(sh: &Shell, choice: EngineChoice) -> Result<Backend> {
        let backend = match choice {
            EngineChoice::Podman => Backend::Container(Engine::Podman.probe(sh)?),
            EngineChoice::Docker => Backend::Container(Engine::Docker.probe(sh)?),
            EngineChoice::Host => Backend::Host,
            EngineChoice::Auto => {
                let mut reasons = Vec::new();
                let mut found = None;
                for engine in [Engine::Podman, Engine::Docker] {
                    match engine.probe(sh) {
                        Ok(engine) => {
                            found = Some(Backend::Container(engine));
                            break;
                        }
                        Err(e) => reasons.push(format!("{}: {:#}", engine.program(), e)),
                    }
                }
                match found {
                    Some(b) => b,
                    None => {
                        eprintln!(
                            "WARNING: no working container engine ({}); falling back to the HOST \
                             toolchain. Results are marked `toolchain: host (unpinned)` and are not \
                             comparable with pinned runs.",
                            reasons.join("; ")
                        );
                        Backend::Host
                    }
                }
            }
        };
        if backend == Backend::Host && choice == EngineChoice::Host {
            eprintln!(
                "WARNING: --engine host: building with the host's unpinned compilers, without \
                 isolation; every record says `toolchain: host (unpinned)`."
            );
        }
        Ok(backend)
    }
}

impl Engine {
    pub fn program(self) -> &'static str {
        match self {
            Engine::Podman => "podman",
            Engine::Docker => "docker",
        }
    }

    /// Global flags. This host family needs runc: crun fails on hybrid cgroups.
    fn global_args(self) -> Vec<String> {
        match self {
            Engine::Podman => match std::env::var("NGCC_PODMAN_RUNTIME") {
                Ok(rt) if rt == "default" => vec![],
                Ok(rt) if !rt.is_empty() => vec!["--runtime".into(), rt],
                _ if which("runc") => vec!["--runtime".into(), "runc".into()],
                _ => vec![],
            },
            Engine::Docker => vec![],
        }
    }

    fn probe(self, sh: &Shell) -> Result<Engine> {
        self.call(sh, &["info".into()]).map(|_| self)
    }

    /// The one way to call the engine: stdout on success, the full command line and
    /// stderr on failure.
    pub fn call(self, sh: &Shell, args: &[String]) -> Result<String> {
        let out = self.call_output(sh, args)?;
        if !out.status.success() {
            bail!(
                "`{}` failed ({}):\n{}",
                self.command_line(args),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Like [`call`](Self::call), but a non-zero exit is returned, not an error.
    pub fn call_output(self, sh: &Shell, args: &[String]) -> Result<Output> {
        let program = self.program();
        let global = self.global_args();
        cmd!(sh, "{program} {global...} {args...}")
            .quiet()
            .ignore_status()
            .output()
            .with_context(|| format!("cannot start `{}`", self.command_line(args)))
    }

    pub fn command_line(self, args: &[String]) -> String {
        let mut all = vec![self.program().to_owned()];
        all.extend(self.global_args());
        all.extend(args.iter().cloned());
        all.join(" ")
    }

    /// The image ID of a tag, or None when the engine has no such image.
    pub fn image_id(self, sh: &Shell, tag: &str) -> Result<Option<String>> {
        let out =
            self.call_output(sh, &["image".into(), "inspect".into(), "--format".into(), "{{.Id}}".into(), tag.into()])?;
        if !out.status.success() {
            return Ok(None);
        }
        let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Ok(Some(id.strip_prefix("sha256:").unwrap_or(&id).to_owned()))
    }
}

pub fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

/// A host directory made visible to the sandbox.
#[derive(Debug, Clone)]
pub struct Mount {
    pub host: Utf8PathBuf,
    pub guest: &'static str,
    pub writable: bool,
}

/// Resource bounds of a sandbox.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    pub memory: String,
    pub pids: u32,
    /// The container's own lifetime; each command also has its own timeout.
    pub lifetime_secs: u64,
    /// Let perf_event_open through the engine's seccomp filter (timing only): the
    /// default profiles allow it only with CAP_SYS_ADMIN, which is not granted instead.
    pub perf_events: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { memory: "4g".into(), pids: 512, lifetime_secs: 6 * 3600, perf_events: false }
    }
}

/// The engine's default seccomp profile with `perf_event_open` allowed and nothing else
/// changed; written to the cache. None when the engine's profile file is not found.
fn seccomp_with_perf() -> Result<Option<Utf8PathBuf>> {
    let default = Utf8Path::new("/usr/share/containers/seccomp.json");
    let Ok(text) = std::fs::read_to_string(default) else { return Ok(None) };
    let derived =
        allow_syscall(&text, "perf_event_open").with_context(|| format!("unexpected seccomp profile {default}"))?;
    let path = crate::project::cache_dir().join("seccomp-perf.json");
    std::fs::create_dir_all(crate::project::cache_dir())?;
    std::fs::write(&path, derived)?;
    Ok(Some(path))
}

/// Remove `name` from every rule of a seccomp profile and add one rule allowing it.
pub fn allow_syscall(profile: &str, name: &str) -> Result<String> {
    let mut p: serde_json::Value = serde_json::from_str(profile)?;
    let rules = p["syscalls"].as_array_mut().context("no syscalls array")?;
    for rule in rules.iter_mut() {
        if let Some(names) = rule["names"].as_array_mut() {
            names.retain(|n| n != name);
        }
    }
    rules.retain(|r| r["names"].as_array().is_none_or(|n| !n.is_empty()));
    rules.push(serde_json::json!({ "names": [name], "action": "SCMP_ACT_ALLOW", "args": [] }));
    Ok(serde_json::to_string_pretty(&p)?)
}

/// The result of one command in the sandbox.
#[derive(Debug)]
pub struct Exec {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub outcome: Outcome,
    pub wall: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Exited(i32),
    Signalled(i32),
    TimedOut,
}

impl Outcome {
    pub fn success(self) -> bool {
        self == Outcome::Exited(0)
    }

    /// `timeout` exits 124 on expiry; a shell-style 128+N is a signal (the container
    /// engines report signals that way).
    fn from_status(status: std::process::ExitStatus) -> Outcome {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(124), _) | (Some(137), _) => Outcome::TimedOut,
            (Some(c), _) if (129..=192).contains(&c) => Outcome::Signalled(c - 128),
            (Some(c), _) => Outcome::Exited(c),
            (None, Some(s)) => Outcome::Signalled(s),
            (None, None) => Outcome::Signalled(0),
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Exited(c) => write!(f, "exit status {c}"),
            Outcome::Signalled(s) => write!(f, "killed by signal {s}"),
            Outcome::TimedOut => write!(f, "timed out"),
        }
    }
}

static LIVE: Mutex<Vec<(Engine, String)>> = Mutex::new(Vec::new());

/// Remove live containers on Ctrl-C before exiting.
pub fn install_interrupt_handler() {
    let _ = ctrlc::set_handler(|| {
        eprintln!("\ninterrupted: removing containers");
        let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
        if let Ok(sh) = Shell::new() {
            for (engine, name) in live {
                let _ = engine.call(&sh, &["rm".into(), "-f".into(), name]);
            }
        }
        std::process::exit(130);
    });
}

/// Either a running container or the host, with the same interface.
pub struct Sandbox {
    backend: Backend,
    container: Option<String>,
    mounts: Vec<Mount>,
}

impl Sandbox {
    /// Start a container from `image` (ignored for the host backend).
    pub fn start(
        sh: &Shell,
        backend: Backend,
        image: Option<&str>,
        mounts: Vec<Mount>,
        limits: &Limits,
    ) -> Result<Sandbox> {
        for m in &mounts {
            if m.host.as_str().contains(':') || m.host.as_str().contains(',') {
                bail!("cannot mount {}: the path contains ':' or ','", m.host);
            }
            std::fs::create_dir_all(&m.host).ok();
        }
        let Backend::Container(engine) = backend else {
            return Ok(Sandbox { backend, container: None, mounts });
        };
        let image = image.context("a container sandbox needs an image")?;
        let name = format!(
            "ngcc-repro-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() % 1_000_000_000)
                .unwrap_or(0)
        );
        let mut args: Vec<String> = vec![
            "run".into(),
            "-d".into(),
            "--name".into(),
            name.clone(),
            "--network=none".into(),
            "--cap-drop=all".into(),
            "--security-opt=no-new-privileges".into(),
            "--read-only".into(),
            "--tmpfs=/tmp:rw,exec,size=1g".into(),
            format!("--memory={}", limits.memory),
            format!("--memory-swap={}", limits.memory),
            format!("--pids-limit={}", limits.pids),
            "--ulimit=nofile=1024:1024".into(),
            "--ulimit=nproc=1024:1024".into(),
        ];
        if limits.perf_events && engine == Engine::Podman {
            match seccomp_with_perf()? {
                Some(profile) => args.push(format!("--security-opt=seccomp={profile}")),
                None => eprintln!("warning: no podman seccomp profile found; perf_event_open stays blocked"),
            }
        }
        for m in &mounts {
            let mode = if m.writable { "rw" } else { "ro" };
            args.push(format!("--volume={}:{}:{mode}", m.host, m.guest));
        }
        args.extend([image.to_owned(), "sleep".into(), limits.lifetime_secs.to_string()]);
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).push((engine, name.clone()));
        let sandbox = Sandbox { backend, container: Some(name), mounts };
        engine.call(sh, &args).context("cannot start the build container")?;
        Ok(sandbox)
    }

    /// A path as the sandboxed commands see it: `guest_root` is a mount point
    /// such as `/src`.
    pub fn path(&self, guest_root: &str, rel: &str) -> Utf8PathBuf {
        let base = match self.backend {
            Backend::Container(_) => Utf8PathBuf::from(guest_root),
            Backend::Host => self
                .mounts
                .iter()
                .find(|m| m.guest == guest_root)
                .map(|m| m.host.clone())
                .unwrap_or_else(|| Utf8PathBuf::from(guest_root)),
        };
        if rel.is_empty() {
            base
        } else {
            base.join(rel)
        }
    }

    /// Run `argv` in `workdir` (a sandbox path) under a wall-time limit.
    pub fn exec(&self, sh: &Shell, workdir: &Utf8Path, argv: &[String], timeout: Duration) -> Result<Exec> {
        let secs = timeout.as_secs().max(1).to_string();
        let mut command: Vec<String> = vec!["timeout".into(), "-k".into(), "5".into(), secs];
        command.extend(argv.iter().cloned());
        let start = Instant::now();
        let output = match (self.backend, &self.container) {
            (Backend::Container(engine), Some(name)) => {
                let mut args: Vec<String> = vec!["exec".into(), "--workdir".into(), workdir.to_string(), name.clone()];
                args.extend(command.iter().cloned());
                engine.call_output(sh, &args)?
            }
            _ => {
                let _dir = sh.push_dir(workdir);
                let (program, args) = command.split_first().expect("timeout prefix");
                cmd!(sh, "{program} {args...}")
                    .quiet()
                    .ignore_status()
                    .output()
                    .with_context(|| format!("cannot run `{}` in {workdir}", command.join(" ")))?
            }
        };
        Ok(Exec {
            outcome: Outcome::from_status(output.status),
            stdout: output.stdout,
            stderr: output.stderr,
            wall: start.elapsed(),
        })
    }

    /// First line of `program --version` in the sandbox.
    pub fn version_line(&self, sh: &Shell, program: &str) -> Result<String> {
        let exec = self.exec(sh, Utf8Path::new("/"), &[program.into(), "--version".into()], Duration::from_secs(60))?;
        if !exec.outcome.success() {
            bail!("`{program} --version` failed: {}", String::from_utf8_lossy(&exec.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&exec.stdout).lines().next().unwrap_or_default().trim().to_owned())
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let (Backend::Container(engine), Some(name)) = (self.backend, self.container.take()) {
            if let Ok(sh) = Shell::new() {
                let mut args: Vec<String> = vec!["rm".into(), "-f".into()];
                if engine == Engine::Podman {
                    args.extend(["-t".into(), "0".into()]);
                }
                args.push(name.clone());
                if let Err(e) = engine.call(&sh, &args) {
                    eprintln!("warning: could not remove container {name}: {e:#}");
                }
            }
            LIVE.lock().unwrap_or_else(|e| e.into_inner()).retain(|(_, n)| n != &name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_syscall_moves_one_name_into_an_allow_rule() {
        let profile = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[
            {"names":["read","write"],"action":"SCMP_ACT_ALLOW","args":[]},
            {"names":["bpf","perf_event_open"],"action":"SCMP_ACT_ERRNO","args":[]},
            {"names":["perf_event_open"],"action":"SCMP_ACT_ERRNO","args":[]}]}"#;
        let out: serde_json::Value = serde_json::from_str(&allow_syscall(profile, "perf_event_open").unwrap()).unwrap();
        let rules = out["syscalls"].as_array().unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[1]["names"], serde_json::json!(["bpf"]));
        assert_eq!(rules[1]["action"], "SCMP_ACT_ERRNO");
        assert_eq!(rules[2], serde_json::json!({"names": ["perf_event_open"], "action": "SCMP_ACT_ALLOW", "args": []}));
        assert_eq!(out["defaultAction"], "SCMP_ACT_ERRNO");
    }
}
