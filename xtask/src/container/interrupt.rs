//! Ctrl-C and SIGTERM. The handler sets a flag and kills what is running (containers
//! and host process groups); the command notices the flag when a sandboxed command
//! returns and stops with [`Interrupted`]. A killed command therefore never becomes a
//! candidate status, and nothing unfinished is recorded. `main` exits 130.

use std::sync::Mutex;
use std::time::Duration;

use xshell::Shell;

use crate::container::engine::Engine;

static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());

/// How long the command may take to stop by itself after the signal.
const GRACE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Live {
    Container(Engine, String),
    /// A host process group (the unisolated host backend).
    HostGroup(i32),
}

pub use crate::project::Interrupted;

pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if crate::project::mark_interrupted() {
            std::process::exit(130);
        }
        crate::warning!("\ninterrupted: stopping (containers are removed; press Ctrl-C again to quit at once)");
        std::thread::spawn(|| {
            kill_all();
            std::thread::sleep(GRACE);
            crate::warning!("interrupted: the command did not stop within {} s", GRACE.as_secs());
            std::process::exit(130);
        });
    });
}

pub fn is_set() -> bool {
    crate::project::interrupted()
}

/// `Err(Interrupted)` once the signal has come.
pub fn check() -> anyhow::Result<()> {
    crate::project::check_interrupted()
}

/// Keeps `live` on the kill list while it exists.
pub struct Registration(Live);

impl Registration {
    pub fn new(live: Live) -> Registration {
        LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(live.clone());
        Registration(live)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|l| *l != self.0);
    }
}

pub fn kill(live: &Live) {
    match live {
        Live::Container(engine, name) => {
            if let Ok(sh) = Shell::new() {
                let _ = engine.call(&sh, &engine.remove_args(name));
            }
        }
        // SAFETY: killpg has no memory effects; a stale group id fails with ESRCH.
        Live::HostGroup(pgid) => unsafe {
            libc::killpg(*pgid, libc::SIGKILL);
        },
    }
}

fn kill_all() {
    let live = LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    for l in &live {
        kill(l);
    }
}
