//! A small scheduler: a graph of steps with their dependencies, run by a pool of
//! workers. A step marked `timing` holds one of the timing slots while it runs (one step
//! per slot, never two); when the other steps have no cores of their own (`shared`),
//! they and the timing steps take turns. Among the steps that may start, the one with the longest
//! path of work ahead starts first, so slow work does not end a run alone. A failed
//! step stops only what needs it; a stop (Ctrl-C) lets running steps end and starts
//! none. Generic over the work: the campaign is its user, the unit tests its synthetic
//! steps.

use std::sync::{Condvar, Mutex};

/// One step of the graph. Dependencies are indices of earlier or later nodes; the graph
/// must have no cycle (`run` checks it).
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// Steps whose success this one needs: their failure skips it.
    pub needs: Vec<usize>,
    /// Steps this one only waits for (they write what it writes, say), whatever their end.
    pub after: Vec<usize>,
    /// Holds a timing slot while it runs.
    pub timing: bool,
    /// Its own expected work, in any unit common to the graph.
    pub weight: f64,
}

/// How a step ended, as the work says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Done (or kept): what needs it may run.
    Pass,
    /// Failed: what needs it is skipped.
    Fail,
    /// Stop the run: no step starts any more.
    Stop,
}

/// How each step of a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ran(Verdict),
    /// Not run: the step it names (a failed or skipped one it needs) did not pass.
    Skipped(usize),
    /// Not started before the run stopped.
    NotRun,
}

/// What the scheduler asks of the work.
pub trait Work: Sync {
    /// Run step `n` (on some worker thread), holding timing slot `slot` if it is a
    /// timing step.
    fn run(&self, n: usize, slot: Option<usize>) -> Verdict;
    /// Step `n` is skipped because step `because` did not pass.
    fn skipped(&self, n: usize, because: usize);
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Waiting,
    Running,
    Ended(Outcome),
}

/// The workers and timing slots of a run.
#[derive(Debug, Clone, Copy)]
pub struct Pool {
    /// Other (untimed) steps at once; the workers are these and the timing slots.
    pub jobs: usize,
    /// Timing steps at once (at least one).
    pub timing: usize,
    /// The other steps share the timing slots' cores: they run only while no timing step
    /// does, and a timing step only while none of them does.
    pub shared: bool,
}

struct Board {
    states: Vec<State>,
    /// Each timing slot's step, if one holds it.
    slots: Vec<Option<usize>>,
    /// Other steps running, and how many may.
    others: usize,
    jobs: usize,
    shared: bool,
    stopped: bool,
}

impl Board {
    fn ended(&self, n: usize) -> bool {
        matches!(self.states[n], State::Ended(_))
    }

    fn passed(&self, n: usize) -> bool {
        self.states[n] == State::Ended(Outcome::Ran(Verdict::Pass))
    }

    /// A waiting step one of whose needs ended without passing, with that need.
    fn doomed(&self, nodes: &[Node]) -> Option<(usize, usize)> {
        (0..nodes.len())
            .filter(|&n| self.states[n] == State::Waiting)
            .find_map(|n| nodes[n].needs.iter().find(|&&d| self.ended(d) && !self.passed(d)).map(|&d| (n, d)))
    }

    /// The waiting step that may start now with the most work ahead of it (the lowest
    /// index among equals).
    fn next(&self, nodes: &[Node], ahead: &[f64]) -> Option<usize> {
        let timing_running = self.slots.iter().any(Option::is_some);
        let room = |n: usize| match nodes[n].timing {
            true => self.slots.contains(&None) && !(self.shared && self.others > 0),
            false => self.others < self.jobs && !(self.shared && timing_running),
        };
        let ready = |&n: &usize| {
            self.states[n] == State::Waiting
                && room(n)
                && nodes[n].needs.iter().chain(&nodes[n].after).all(|&d| self.ended(d))
        };
        (0..nodes.len()).filter(ready).fold(None, |best: Option<usize>, n| match best {
            Some(b) if ahead[b] >= ahead[n] => Some(b),
            _ => Some(n),
        })
    }

    fn running(&self) -> bool {
        self.states.contains(&State::Running)
    }

    /// Step `n` starts: a free timing slot if it is a timing step (`next` saw one).
    fn take(&mut self, n: usize, timing: bool) -> Option<usize> {
        if !timing {
            self.others += 1;
            return None;
        }
        let free = self.slots.iter().position(Option::is_none)?;
        self.slots[free] = Some(n);
        Some(free)
    }

    fn give_back(&mut self, slot: Option<usize>) {
        match slot {
            Some(s) => self.slots[s] = None,
            None => self.others -= 1,
        }
    }
}

/// Each step's weight plus the longest chain of steps waiting on it; an error names a
/// step on a cycle or a dependency out of range.
fn work_ahead(nodes: &[Node]) -> Result<Vec<f64>, String> {
    let mut ahead: Vec<Option<f64>> = vec![None; nodes.len()];
    let mut dependents = vec![Vec::new(); nodes.len()];
    for (n, node) in nodes.iter().enumerate() {
        for &d in node.needs.iter().chain(&node.after) {
            dependents.get_mut(d).ok_or(format!("step {n} depends on step {d}, which does not exist"))?.push(n);
        }
    }
    // Repeated relaxation: a graph of n steps settles in n rounds unless it has a cycle.
    for _ in 0..=nodes.len() {
        let mut changed = false;
        for n in (0..nodes.len()).rev() {
            let below: Option<Vec<f64>> = dependents[n].iter().map(|&d| ahead[d]).collect();
            if let (None, Some(below)) = (ahead[n], below) {
                ahead[n] = Some(nodes[n].weight + below.into_iter().fold(0.0, f64::max));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    match ahead.iter().position(Option::is_none) {
        Some(n) => Err(format!("step {n} is on a dependency cycle")),
        None => Ok(ahead.into_iter().flatten().collect()),
    }
}

/// Run the graph with the pool's workers and slots; every step's outcome, by index.
pub fn run(nodes: &[Node], pool: Pool, work: &dyn Work) -> Result<Vec<Outcome>, String> {
    let ahead = work_ahead(nodes)?;
    let board = Mutex::new(Board {
        states: vec![State::Waiting; nodes.len()],
        slots: vec![None; pool.timing.max(1)],
        others: 0,
        jobs: pool.jobs.max(1),
        shared: pool.shared,
        stopped: false,
    });
    let wake = Condvar::new();
    std::thread::scope(|s| {
        for _ in 0..(pool.jobs.max(1) + pool.timing.max(1)).min(nodes.len().max(1)) {
            s.spawn(|| worker(nodes, &ahead, (&board, &wake), work));
        }
    });
    let board = board.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let outcome = |s: &State| if let State::Ended(o) = s { *o } else { Outcome::NotRun };
    Ok(board.states.iter().map(outcome).collect())
}

/// Take steps until none is left (or the run stopped and nothing runs).
fn worker(nodes: &[Node], ahead: &[f64], (board, wake): (&Mutex<Board>, &Condvar), work: &dyn Work) {
    let lock = || board.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = lock();
    loop {
        if let Some((n, because)) = b.doomed(nodes) {
            b.states[n] = State::Ended(Outcome::Skipped(because));
            drop(b);
            work.skipped(n, because);
            wake.notify_all();
            b = lock();
            continue;
        }
        let next = if b.stopped { None } else { b.next(nodes, ahead) };
        let Some(n) = next else {
            let waiting = !b.stopped && b.states.contains(&State::Waiting);
            if !b.running() && !waiting {
                wake.notify_all();
                return;
            }
            b = wake.wait(b).unwrap_or_else(std::sync::PoisonError::into_inner);
            continue;
        };
        b.states[n] = State::Running;
        let slot = b.take(n, nodes[n].timing);
        drop(b);
        // A panicking step is a failed one; the others go on.
        let verdict =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.run(n, slot))).unwrap_or(Verdict::Fail);
        b = lock();
        b.states[n] = State::Ended(Outcome::Ran(verdict));
        b.give_back(slot);
        b.stopped |= verdict == Verdict::Stop;
        wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Synthetic steps: each sleeps its `ms` and ends with its verdict; the log holds
    /// (step, start or end) in the order they happened, and skips.
    struct Fake {
        ms: Vec<u64>,
        verdicts: Vec<Verdict>,
        log: Mutex<Vec<(usize, &'static str)>>,
        timing_now: AtomicUsize,
        timing_most: AtomicUsize,
        timing: Vec<bool>,
        /// Each slot's holder count (never above one), and how often the two kinds ran at once.
        holders: [AtomicUsize; 4],
        others_now: AtomicUsize,
        mixed: AtomicUsize,
    }

    impl Fake {
        fn new(ms: &[u64], timing: &[bool]) -> Fake {
            Fake {
                ms: ms.to_vec(),
                verdicts: vec![Verdict::Pass; ms.len()],
                log: Mutex::new(Vec::new()),
                timing_now: AtomicUsize::new(0),
                timing_most: AtomicUsize::new(0),
                timing: timing.to_vec(),
                holders: Default::default(),
                others_now: AtomicUsize::new(0),
                mixed: AtomicUsize::new(0),
            }
        }

        fn pos(&self, n: usize, what: &str) -> usize {
            self.log.lock().unwrap().iter().position(|e| *e == (n, what)).unwrap_or_else(|| panic!("{n} {what}"))
        }
    }

    impl Work for Fake {
        fn run(&self, n: usize, slot: Option<usize>) -> Verdict {
            assert_eq!(slot.is_some(), self.timing[n], "a slot for timing steps only");
            self.log.lock().unwrap().push((n, "start"));
            let (mine, theirs) = match slot {
                Some(_) => (&self.timing_now, &self.others_now),
                None => (&self.others_now, &self.timing_now),
            };
            let now = mine.fetch_add(1, Ordering::SeqCst) + 1;
            if theirs.load(Ordering::SeqCst) > 0 {
                self.mixed.fetch_add(1, Ordering::SeqCst);
            }
            if let Some(s) = slot {
                self.timing_most.fetch_max(now, Ordering::SeqCst);
                assert_eq!(self.holders[s].fetch_add(1, Ordering::SeqCst), 0, "slot {s} held twice");
            }
            std::thread::sleep(Duration::from_millis(self.ms[n]));
            if let Some(s) = slot {
                self.holders[s].fetch_sub(1, Ordering::SeqCst);
            }
            mine.fetch_sub(1, Ordering::SeqCst);
            self.log.lock().unwrap().push((n, "end"));
            self.verdicts[n]
        }

        fn skipped(&self, n: usize, _: usize) {
            self.log.lock().unwrap().push((n, "skip"));
        }
    }

    fn pool(jobs: usize) -> Pool {
        Pool { jobs, timing: 1, shared: false }
    }

    /// Step 0 waits (at most 10 s) for step 1 to start, and records whether it did: two
    /// steps the scheduler lets run at once meet, whatever the machine's load.
    struct Meet(std::sync::atomic::AtomicBool, AtomicUsize);

    impl Meet {
        fn new() -> Meet {
            Meet(Default::default(), AtomicUsize::new(0))
        }

        fn met(&self) -> bool {
            self.1.load(Ordering::SeqCst) == 1
        }
    }

    impl Work for Meet {
        fn run(&self, n: usize, _: Option<usize>) -> Verdict {
            if n == 1 {
                self.0.store(true, Ordering::SeqCst);
                return Verdict::Pass;
            }
            let until = std::time::Instant::now() + Duration::from_secs(10);
            while !self.0.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            self.1.store(usize::from(self.0.load(Ordering::SeqCst)), Ordering::SeqCst);
            Verdict::Pass
        }
        fn skipped(&self, _: usize, _: usize) {}
    }

    fn node(needs: &[usize], weight: f64) -> Node {
        Node { needs: needs.to_vec(), weight, ..Node::default() }
    }

    #[test]
    fn a_step_starts_after_what_it_needs_and_waits_for_what_it_follows() {
        // 0 → 1 → 2; 3 only after 2.
        let nodes = [node(&[], 1.0), node(&[0], 1.0), node(&[1], 1.0), Node { after: vec![2], ..node(&[], 1.0) }];
        let fake = Fake::new(&[20, 20, 20, 1], &[false; 4]);
        let out = run(&nodes, pool(3), &fake).unwrap();
        assert!(out.iter().all(|o| *o == Outcome::Ran(Verdict::Pass)), "{out:?}");
        assert!(fake.pos(0, "end") < fake.pos(1, "start"));
        assert!(fake.pos(1, "end") < fake.pos(2, "start"));
        assert!(fake.pos(2, "end") < fake.pos(3, "start"), "3 waits for 2 although it needs nothing");
    }

    #[test]
    fn a_failure_skips_only_what_needs_it() {
        // 0 fails: 1 needs it, 2 needs 1 (skipped in turn), 3 only follows it, 4 is apart.
        let nodes = [
            node(&[], 1.0),
            node(&[0], 1.0),
            node(&[1], 1.0),
            Node { after: vec![0], ..node(&[], 1.0) },
            node(&[], 1.0),
        ];
        let mut fake = Fake::new(&[5, 5, 5, 5, 5], &[false; 5]);
        fake.verdicts[0] = Verdict::Fail;
        let out = run(&nodes, pool(2), &fake).unwrap();
        assert_eq!(
            out,
            [
                Outcome::Ran(Verdict::Fail),
                Outcome::Skipped(0),
                Outcome::Skipped(1),
                Outcome::Ran(Verdict::Pass),
                Outcome::Ran(Verdict::Pass)
            ]
        );
        let log = fake.log.lock().unwrap();
        assert!(log.contains(&(1, "skip")) && log.contains(&(2, "skip")) && !log.contains(&(1, "start")));
    }

    #[test]
    fn timing_steps_never_overlap_and_others_run_beside_them() {
        // Four independent timing steps and two others, four workers.
        let timing = [true, true, true, true, false, false];
        let nodes: Vec<Node> = timing.iter().map(|&t| Node { timing: t, ..node(&[], 1.0) }).collect();
        let fake = Fake::new(&[15, 15, 15, 15, 40, 40], &timing);
        let out = run(&nodes, pool(4), &fake).unwrap();
        assert!(out.iter().all(|o| *o == Outcome::Ran(Verdict::Pass)), "{out:?}");
        assert_eq!(fake.timing_most.load(Ordering::SeqCst), 1, "two timing steps at once");
        // The two others started before the timing steps were all done: side by side.
        assert!(fake.pos(4, "start") < fake.pos(3, "end").max(fake.pos(0, "end")));
        assert!(fake.pos(5, "start") < fake.pos(3, "end").max(fake.pos(0, "end")));
    }

    #[test]
    fn two_timing_slots_run_two_timing_steps_at_once_each_slot_alone() {
        let timing = [true; 6];
        let nodes: Vec<Node> = timing.iter().map(|&t| Node { timing: t, ..node(&[], 1.0) }).collect();
        let fake = Fake::new(&[30; 6], &timing);
        let out = run(&nodes, Pool { jobs: 4, timing: 2, shared: false }, &fake).unwrap();
        assert!(out.iter().all(|o| *o == Outcome::Ran(Verdict::Pass)), "{out:?}");
        assert!(fake.timing_most.load(Ordering::SeqCst) <= 2, "two slots, two at once at most");
        // Two timing steps do run at once on two slots, and not on one.
        let two = [Node { timing: true, ..node(&[], 2.0) }, Node { timing: true, ..node(&[], 1.0) }];
        let meet = Meet::new();
        run(&two, Pool { jobs: 1, timing: 2, shared: false }, &meet).unwrap();
        assert!(meet.met(), "two slots, yet the second timing step waited");
    }

    #[test]
    fn shared_cores_make_timing_and_other_steps_take_turns() {
        let timing = [true, true, false, false, true, false];
        let nodes: Vec<Node> = timing.iter().map(|&t| Node { timing: t, ..node(&[], 1.0) }).collect();
        let fake = Fake::new(&[10; 6], &timing);
        let out = run(&nodes, Pool { jobs: 4, timing: 2, shared: true }, &fake).unwrap();
        assert!(out.iter().all(|o| *o == Outcome::Ran(Verdict::Pass)), "{out:?}");
        assert_eq!(fake.mixed.load(Ordering::SeqCst), 0, "a timing step ran beside another");
    }

    #[test]
    fn cores_of_their_own_let_other_steps_run_beside_a_timing_step() {
        // The timing step waits (at most 10 s) for the other one to start beside it.
        let nodes = [Node { timing: true, ..node(&[], 2.0) }, node(&[], 1.0)];
        let meet = Meet::new();
        run(&nodes, Pool { jobs: 1, timing: 1, shared: false }, &meet).unwrap();
        assert!(meet.met(), "the other step did not start beside the timing one");
    }

    #[test]
    fn the_longest_chain_of_work_starts_first() {
        // One worker: 2 is heavy, and 1 is light but leads to the heaviest chain (1 → 3).
        let nodes = [node(&[], 1.0), node(&[], 1.0), node(&[], 5.0), node(&[1], 10.0)];
        let fake = Fake::new(&[1, 1, 1, 1], &[false; 4]);
        run(&nodes, pool(1), &fake).unwrap();
        let order: Vec<usize> = fake.log.lock().unwrap().iter().filter(|e| e.1 == "start").map(|e| e.0).collect();
        assert_eq!(order, [1, 3, 2, 0]);
    }

    #[test]
    fn a_stop_lets_running_steps_end_and_starts_no_other() {
        // Two workers: 0 stops the run while 1 runs; 2 and 3 never start.
        let nodes = [node(&[], 9.0), node(&[], 8.0), node(&[], 1.0), node(&[1], 1.0)];
        let mut fake = Fake::new(&[5, 30, 1, 1], &[false; 4]);
        fake.verdicts[0] = Verdict::Stop;
        let out = run(&nodes, pool(2), &fake).unwrap();
        assert_eq!(out, [Outcome::Ran(Verdict::Stop), Outcome::Ran(Verdict::Pass), Outcome::NotRun, Outcome::NotRun]);
        assert!(fake.pos(1, "end") > fake.pos(0, "end"), "the running step ended by itself");
    }

    #[test]
    fn a_cycle_or_a_missing_step_is_refused_before_anything_runs() {
        let fake = Fake::new(&[1, 1], &[false; 2]);
        let cycle = [node(&[1], 1.0), node(&[0], 1.0)];
        assert!(run(&cycle, pool(2), &fake).unwrap_err().contains("cycle"));
        let missing = [node(&[7], 1.0)];
        assert!(run(&missing, pool(2), &fake).unwrap_err().contains("does not exist"));
        assert!(fake.log.lock().unwrap().is_empty());
    }

    #[test]
    fn a_panicking_step_fails_and_the_run_goes_on() {
        struct Boom;
        impl Work for Boom {
            fn run(&self, n: usize, _: Option<usize>) -> Verdict {
                assert_ne!(n, 0, "step 0 panics");
                Verdict::Pass
            }
            fn skipped(&self, _: usize, _: usize) {}
        }
        let nodes = [node(&[], 1.0), node(&[0], 1.0), node(&[], 1.0)];
        let out = run(&nodes, pool(2), &Boom).unwrap();
        assert_eq!(out, [Outcome::Ran(Verdict::Fail), Outcome::Skipped(0), Outcome::Ran(Verdict::Pass)]);
    }
}
