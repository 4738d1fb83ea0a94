//! The host's cores as a run divides them: timing cores (one trial process on each,
//! nothing else of the run there) and the others, where the rest of the run goes. The
//! engine confines each container to its cores (`--cpuset-cpus`), which the sandboxed
//! process cannot leave; the tool confines itself and the engine's helpers it starts.
//! Topology and busy time come from the host's sysfs and procfs, which no sandbox writes.

use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Result};
use camino::Utf8Path;

/// `0,2-3` → [0, 2, 3]: sorted, each core once.
pub fn parse_list(text: &str) -> std::result::Result<Vec<usize>, String> {
    let mut cores = Vec::new();
    for part in text.split(',').map(str::trim) {
        let num = |s: &str| s.trim().parse::<usize>().map_err(|_| format!("`{s}` is not a core number in `{text}`"));
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        if lo > hi || hi - lo > 4096 {
            return Err(format!("`{part}` is not a range of cores"));
        }
        cores.extend(lo..=hi);
    }
    cores.sort_unstable();
    cores.dedup();
    Ok(cores)
}

/// [0, 2, 3] → `0,2-3`, as engines take it.
pub fn format_list(cores: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cores.len() {
        let mut j = i;
        while j + 1 < cores.len() && cores[j + 1] == cores[j] + 1 {
            j += 1;
        }
        parts.push(if j == i { cores[i].to_string() } else { format!("{}-{}", cores[i], cores[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// The cores this process may run on.
pub fn allowed() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Confine the calling thread (and the threads and processes it starts after) to `cores`.
pub fn confine_self(cores: &[usize]) -> Result<()> {
    // SAFETY: as in `allowed`; CPU_SET is given indices below CPU_SETSIZE only.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        cores.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize).for_each(|&c| libc::CPU_SET(c, &mut set));
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        bail!("cannot confine the tool to cores {}: {}", format_list(cores), std::io::Error::last_os_error());
    }
    Ok(())
}

/// The next of `pool`'s cores, in turn over the process (None: an empty pool).
pub fn next_of(pool: &[usize]) -> Option<usize> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    (!pool.is_empty()).then(|| pool[NEXT.fetch_add(1, Ordering::Relaxed) % pool.len()])
}

/// The other hardware threads of `core`'s physical core (empty: none, or unknown).
pub fn siblings(root: &Utf8Path, core: usize) -> Vec<usize> {
    let path = root.join(format!("sys/devices/system/cpu/cpu{core}/topology/thread_siblings_list"));
    let listed = std::fs::read_to_string(path).ok().and_then(|t| parse_list(t.trim()).ok()).unwrap_or_default();
    listed.into_iter().filter(|&c| c != core).collect()
}

/// How a run's cores are divided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Division {
    /// One trial process at a time on each.
    pub timing: Vec<usize>,
    /// The run's other work: the allowed cores that are neither timing cores nor their
    /// siblings. Empty: the other work takes turns with the timing steps instead.
    pub others: Vec<usize>,
}

/// Divide `allowed` into `timing` and the rest; a timing core that is not allowed, or
/// that shares a physical core with another, is refused.
pub fn divide(
    timing: &[usize],
    allowed: &[usize],
    siblings: impl Fn(usize) -> Vec<usize>,
) -> std::result::Result<Division, String> {
    if timing.is_empty() {
        return Err("no timing core given".into());
    }
    let mut near = Vec::new();
    for &c in timing {
        if !allowed.contains(&c) {
            return Err(format!("core {c} is not one this process may use ({})", format_list(allowed)));
        }
        let sib = siblings(c);
        if let Some(s) = sib.iter().find(|s| timing.contains(s)) {
            return Err(format!("cores {c} and {s} are threads of one physical core: time on one of them"));
        }
        near.extend(sib);
    }
    let others = allowed.iter().copied().filter(|c| !timing.contains(c) && !near.contains(c)).collect();
    Ok(Division { timing: timing.to_vec(), others })
}

/// Busy time of `cores` so far, in ns, from `/proc/stat` (user, nice, system, irq,
/// softirq and steal ticks; guest time is inside user). None when unreadable.
pub fn busy_ns(root: &Utf8Path, cores: &[usize]) -> Option<u64> {
    let text = std::fs::read_to_string(root.join("proc/stat")).ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok().filter(|&h| h > 0)?;
    let mut total = 0u64;
    for &c in cores {
        let line = text.lines().find(|l| l.split_whitespace().next() == Some(&format!("cpu{c}")))?;
        let f: Vec<u64> = line.split_whitespace().skip(1).map_while(|w| w.parse().ok()).collect();
        let busy = [0, 1, 2, 5, 6, 7].iter().map(|&i| f.get(i).copied().unwrap_or(0)).sum::<u64>();
        total = total.saturating_add(busy);
    }
    Some(total.saturating_mul(1_000_000_000) / hz)
}

/// The steps of a run, with when each started and ended, so that a record can say what
/// ran while its trials did.
#[derive(Debug, Default)]
pub struct Activity {
    spans: Mutex<Vec<Span>>,
}

#[derive(Debug)]
struct Span {
    name: String,
    from: Instant,
    to: Option<Instant>,
}

impl Activity {
    /// A step starts; its number, for `end` and `during`.
    pub fn begin(&self, name: String) -> usize {
        let mut spans = self.spans.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        spans.push(Span { name, from: Instant::now(), to: None });
        spans.len() - 1
    }

    pub fn end(&self, n: usize) {
        let mut spans = self.spans.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(s) = spans.get_mut(n) {
            s.to.get_or_insert_with(Instant::now);
        }
    }

    /// The steps other than `me` that ran at some time between `from` and `to`.
    pub fn during(&self, me: usize, from: Instant, to: Instant) -> Vec<String> {
        let spans = self.spans.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let overlaps = |s: &&Span| s.from <= to && s.to.is_none_or(|end| end >= from);
        let mut names: Vec<String> =
            spans.iter().enumerate().filter(|(n, s)| *n != me && overlaps(s)).map(|(_, s)| s.name.clone()).collect();
        names.dedup();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_lists_read_and_write_as_engines_take_them() {
        assert_eq!(parse_list("0,2-3").unwrap(), [0, 2, 3]);
        assert_eq!(parse_list(" 3, 1,1 ").unwrap(), [1, 3]);
        assert!(parse_list("1-").is_err() && parse_list("x").is_err() && parse_list("4-2").is_err());
        assert_eq!(format_list(&[0, 2, 3, 4, 7]), "0,2-4,7");
        assert_eq!(format_list(&[]), "");
    }

    #[test]
    fn timing_cores_leave_their_siblings_out_of_the_others() {
        // Four cores, 0/2 and 1/3 threads of one physical core each.
        let sib = |c: usize| vec![[2, 3, 0, 1][c]];
        let d = divide(&[1], &[0, 1, 2, 3], sib).unwrap();
        assert_eq!(d, Division { timing: vec![1], others: vec![0, 2] });
        let e = divide(&[1, 3], &[0, 1, 2, 3], sib).unwrap_err();
        assert!(e.contains("one physical core"), "{e}");
        assert!(divide(&[5], &[0, 1], |_| vec![]).unwrap_err().contains("not one this process may use"));
        // Every core timed: the others take turns.
        assert_eq!(divide(&[0, 1], &[0, 1], |_| vec![]).unwrap().others, Vec::<usize>::new());
    }

    #[test]
    fn busy_time_is_read_per_core_from_proc_stat() {
        let t = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(t.path()).unwrap();
        std::fs::create_dir_all(root.join("proc")).unwrap();
        let stat = "cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 10 1 5 100 7 2 3 4 0 0\ncpu1 1 0 1 500 0 0 0 0 0 0\n";
        std::fs::write(root.join("proc/stat"), stat).unwrap();
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        // cpu0: 10 + 1 + 5 + 2 + 3 + 4 ticks busy; idle and iowait left out.
        assert_eq!(busy_ns(root, &[0]), Some(25 * 1_000_000_000 / hz));
        assert_eq!(busy_ns(root, &[0, 1]), Some(27 * 1_000_000_000 / hz));
        assert_eq!(busy_ns(root, &[2]), None, "a core the kernel does not list");
    }

    #[test]
    fn a_record_names_the_steps_that_overlapped_its_trials() {
        let a = Activity::default();
        let before = Instant::now();
        let verify = a.begin("verify x".into());
        let me = a.begin("bench y".into());
        a.end(verify);
        let later = Instant::now();
        let other = a.begin("bench z".into());
        assert_eq!(a.during(me, before, later), ["verify x"]);
        assert_eq!(a.during(me, Instant::now(), Instant::now()), ["bench z"], "verify had ended");
        a.end(other);
    }
}
