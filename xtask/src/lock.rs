//! File locks (`flock`) that runs of the tool take on shared cache entries: a build
//! key, a cached source tree, an image being built.

use std::time::Duration;

use anyhow::{Context, Result};
use camino::Utf8Path;

/// One build key's lock (`flock`): exclusive while the build is checked or made, shared
/// while it is used, so no run removes a build another is running. A cached source tree
/// has one too, held while it is checked or made (`compile::trees`).
pub struct KeyLock(std::fs::File);

impl KeyLock {
    pub fn exclusive(path: &Utf8Path) -> Result<KeyLock> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open the lock {path}"))?;
        let lock = KeyLock(file);
        lock.take(libc::LOCK_EX, path)?;
        Ok(lock)
    }

    pub(crate) fn share(self) -> Result<KeyLock> {
        // SAFETY: flock on a file descriptor this value owns.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&self.0), libc::LOCK_SH) } != 0 {
            return Err(std::io::Error::last_os_error()).context("cannot share the build lock");
        }
        Ok(self)
    }

    /// Wait for the lock, saying so once, and stay interruptible.
    fn take(&self, how: i32, path: &Utf8Path) -> Result<()> {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.0);
        let mut said = false;
        // SAFETY: flock on a file descriptor this value owns.
        while unsafe { libc::flock(fd, how | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(e).with_context(|| format!("cannot lock {path}"));
            }
            if !said {
                crate::say!("  waiting for another run that holds the lock {path}");
                said = true;
            }
            crate::project::check_interrupted()?;
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }
}
