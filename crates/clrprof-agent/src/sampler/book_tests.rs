//! The rules of `book.rs`, tick by tick.

use super::*;

const MS: u64 = 1_000_000;

fn wait(sp: usize) -> WaitKey {
    WaitKey {
        nr: 202,
        arg0: 0x1000,
        sp,
        pc: 0x7000,
    }
}

/// Wall tick `n` (one every 10 ms), where the thread's CPU clock reads `cpu`; `found` is
/// what a look finds, `None` if the tick must not look. Returns the samples written and
/// whether the thread must be asked.
fn tick(book: &mut Book, n: u64, cpu: u64, found: Option<Whereabouts>) -> (Vec<WallSample>, bool) {
    let mut out = Vec::new();
    let ask = book.on_tick(
        n * 10 * MS,
        cpu,
        || found.or_else(|| panic!("tick {n} looked at the thread")),
        &mut |w| out.push(w),
    );
    (out, ask)
}

#[test]
fn a_thread_settled_in_one_wait_is_taken_back_to_it_without_a_look_for_a_few_ticks() {
    let mut book = Book::new(1, 0, 0);
    let k = wait(0x5000);
    book.remember(k, 42);
    book.stack = 7;
    book.last_cpu = Some((7, 0));
    let blocked_in = |n| Some(Whereabouts::Blocked(wait(n)));
    let running = |wall_ns| running_at(7, wall_ns);
    // Each tick the thread ran 1 ms (a request) and went back to the same wait.
    tick(&mut book, 1, MS, Some(Whereabouts::Running));
    assert!(!tick(&mut book, 2, 2 * MS, blocked_in(0x5000)).1);
    // The wait found at tick 2 ended in this interval: what the thread did not run of it
    // is that wait's; a look that finds it blocked again gives what it ran to its latest
    // CPU sample's stack.
    let (out, _) = tick(&mut book, 3, 3 * MS, blocked_in(0x5000));
    assert_eq!(out, vec![blocked(42, 18 * MS), running(MS)]);
    // Found there twice: the next tick does not look, and the two after it are skipped
    // (not due, the clock not even read); what the thread ran of that stretch is charged
    // to its latest CPU sample's stack, the rest to the wait. The running time is held
    // until the next look, in one sample.
    let (out, _) = tick(&mut book, 4, 4 * MS, None);
    assert_eq!(out, vec![blocked(42, 9 * MS)]);
    assert!(!book.due(50 * MS, 10 * MS));
    assert!(!book.due(64 * MS, 10 * MS));
    assert!(book.due(66 * MS, 10 * MS));
    // Then it is looked at again, after the stretch is charged: still there, so it is
    // trusted again.
    let (out, _) = tick(&mut book, 7, 7 * MS, blocked_in(0x5000));
    assert_eq!(out, vec![blocked(42, 27 * MS), running(4 * MS)]);
    assert!(book.due(80 * MS, 10 * MS));
    let (out, _) = tick(&mut book, 8, 8 * MS, None);
    assert_eq!(out, vec![blocked(42, 9 * MS)]);
    // A new CPU stack: what was held at the old one is written.
    book.last_cpu = Some((8, 0));
    let (out, ask) = tick(&mut book, 11, 10 * MS, blocked_in(0x5000));
    assert_eq!(
        out,
        vec![running(MS), blocked(42, 28 * MS), running_at(8, 2 * MS)]
    );
    assert!(!ask);
    let mut out = Vec::new();
    book.flush(115 * MS, None, &mut |w| out.push(w));
    assert_eq!(out, vec![blocked(42, 5 * MS)]);
    // A tick of a thread that did not run in such a stretch looks where it is.
    let mut book = Book::new(1, 0, 0);
    book.remember(k, 42);
    book.cpu_seen = MS;
    book.last_cpu = Some((7, 0));
    book.settled = Some((k, 2, false));
    tick(&mut book, 1, 2 * MS, None);
    let (out, _) = tick(&mut book, 4, 2 * MS, blocked_in(0x5000));
    assert_eq!(out, vec![blocked(42, 9 * MS), running(MS)]);
    // Found running: trusted again after the look (it goes back to its wait)...
    book.settled = Some((k, 2, true));
    tick(&mut book, 10, 10 * MS, Some(Whereabouts::Running));
    assert_eq!(book.settled, Some((k, 2, false)));
    tick(&mut book, 11, 11 * MS, None);
    // ... but found in another wait, it must settle there again.
    book.settled = Some((k, 2, true));
    tick(&mut book, 12, 12 * MS, blocked_in(0x6000));
    assert_eq!(book.settled, Some((wait(0x6000), 1, false)));
}

#[test]
fn what_a_new_thread_ran_before_its_first_wait_is_not_the_waits() {
    // Registered at 5 ms with 1 ms of CPU; it sets up for 4 ms, then polls a socket.
    let mut book = Book::new(1, 5 * MS, MS);
    book.remember(wait(0x5000), 42);
    book.last_cpu = Some((7, 0));
    let (out, ask) = tick(
        &mut book,
        2,
        5 * MS,
        Some(Whereabouts::Blocked(wait(0x5000))),
    );
    assert!(!ask);
    assert_eq!(out, vec![running_at(7, 4 * MS)]);
    let mut out = Vec::new();
    book.flush(30 * MS, None, &mut |w| out.push(w));
    assert_eq!(out, vec![blocked(42, 11 * MS + 10 * MS)]);
    // Where its CPU then is not known, the first interval is where the thread is found.
    let mut book = Book::new(1, 5 * MS, 0);
    book.remember(wait(0x5000), 42);
    book.last_cpu = Some((7, 0));
    let (out, _) = tick(
        &mut book,
        2,
        5 * MS,
        Some(Whereabouts::Blocked(wait(0x5000))),
    );
    assert!(out.is_empty());
    let mut out = Vec::new();
    book.flush(20 * MS, None, &mut |w| out.push(w));
    assert_eq!(out, vec![blocked(42, 15 * MS)]);
}

#[test]
fn the_interval_a_wait_ends_in_is_the_waits_but_for_what_the_thread_ran() {
    let mut book = Book::new(1, 0, 1);
    book.remember(wait(0x5000), 42);
    book.last_cpu = Some((7, 0));
    let blocked_in = || Some(Whereabouts::Blocked(wait(0x5000)));
    tick(&mut book, 1, 1, blocked_in());
    // Woken in the second interval, it ran 4 ms of it: found running at the tick.
    let (out, _) = tick(&mut book, 2, 1 + 4 * MS, Some(Whereabouts::Running));
    assert_eq!(out, vec![blocked(42, 16 * MS), running_at(42, 4 * MS)]);
    // Blocked in another wait; then a CPU sample 7 ms after the next tick ends it, the
    // thread having run 2 ms of those 7: the wait's are the other 5. From the sample on,
    // the tick's interval is what the thread is found doing.
    book.remember(wait(0x6000), 43);
    tick(
        &mut book,
        3,
        1 + 4 * MS,
        Some(Whereabouts::Blocked(wait(0x6000))),
    );
    let mut out = Vec::new();
    book.on_stack(9, Some((37 * MS, 1 + 6 * MS)), &mut |w| out.push(w));
    assert_eq!(out, vec![blocked(43, 15 * MS), running_at(9, 2 * MS)]);
    let (out, _) = tick(&mut book, 4, 1 + 7 * MS, Some(Whereabouts::Running));
    assert_eq!(out, vec![running_at(9, 3 * MS)]);
    // Where the capture's time is not known, the wait is what was held.
    tick(
        &mut book,
        5,
        1 + 7 * MS,
        Some(Whereabouts::Blocked(wait(0x6000))),
    );
    let mut out = Vec::new();
    book.on_stack(9, None, &mut |w| out.push(w));
    assert_eq!(out, vec![blocked(43, 10 * MS)]);
    // Found in the wait at a tick (10 ms of it), woken, and ended 10 ms after it, 2 ms of
    // which it ran (no CPU sample): the other 8 are the wait's.
    tick(
        &mut book,
        6,
        1 + 7 * MS,
        Some(Whereabouts::Blocked(wait(0x6000))),
    );
    let mut out = Vec::new();
    book.flush(70 * MS, Some(1 + 9 * MS), &mut |w| out.push(w));
    assert_eq!(out, vec![blocked(43, 18 * MS), running_at(7, 2 * MS)]);
}

#[test]
fn a_condition_variable_waited_on_through_either_futex_word_is_one_wait() {
    let mut book = Book::new(1, 0, 0);
    let k = wait(0x5000);
    let other_word = WaitKey {
        arg0: k.arg0 + 4,
        ..k
    };
    book.remember(k, 42);
    book.remember(other_word, 42);
    book.cpu_seen = 1;
    tick(&mut book, 1, 2 * MS, Some(Whereabouts::Blocked(k)));
    tick(&mut book, 2, 3 * MS, Some(Whereabouts::Blocked(other_word)));
    // Settled: the next tick takes it back there without a look.
    let (out, _) = tick(&mut book, 3, 4 * MS, None);
    assert_eq!(out, vec![blocked(42, 10 * MS)]);
}

#[test]
fn a_wait_taken_on_trust_is_looked_at_once_the_thread_stops_running() {
    let mut book = Book::new(1, 0, 0);
    let k = wait(0x5000);
    book.remember(k, 42);
    book.cpu_seen = 1;
    book.settled = Some((k, 2, false));
    // Taken on trust after running a little...
    let (out, _) = tick(&mut book, 1, 2 * MS, None);
    assert!(out.is_empty());
    // ... then it did not run: looked at, and found in another wait, never seen: asked.
    let (out, ask) = tick(
        &mut book,
        2,
        2 * MS,
        Some(Whereabouts::Blocked(wait(0x6000))),
    );
    assert_eq!(out, vec![blocked(42, 10 * MS)]);
    assert!(ask);
    // A wait a look found is not looked at again while the thread does not run.
    let mut book = Book::new(1, 0, 0);
    book.remember(k, 42);
    book.cpu_seen = 1;
    tick(&mut book, 1, 2 * MS, Some(Whereabouts::Blocked(k)));
    let (out, _) = tick(&mut book, 2, 2 * MS, None);
    assert!(out.is_empty());
}

#[test]
fn an_answer_without_a_stack_ends_the_question() {
    let mut book = Book::new(1, 0, 0);
    book.cpu_seen = 1;
    let found = || Some(Whereabouts::Blocked(wait(0x5000)));
    assert!(tick(&mut book, 1, 1, found()).1);
    book.on_answer_without_stack();
    // Not left waiting for an answer until the timeout (which then took the wait to
    // have no stack for good): asked again.
    let (out, ask) = tick(&mut book, 2, 1, found());
    assert!(out.is_empty());
    assert!(ask);
}

#[test]
fn a_stretch_without_samples_is_new_once_until_the_next_sample() {
    let mut book = Book::new(1, 0, 0);
    // Before any sample: one stretch since the clock was armed.
    assert!(book.new_stretch_without_sample());
    assert!(!book.new_stretch_without_sample());
    book.on_cpu_capture(at(50_000_000, 50_010_000, 0), 0);
    assert!(book.new_stretch_without_sample());
    assert!(!book.new_stretch_without_sample());
    assert!(!book.new_stretch_without_sample());
    book.on_cpu_capture(at(95_000_000, 95_010_000, 0), 0);
    assert!(book.new_stretch_without_sample());
}

/// A capture whose handler ran from `enter` to `exit`, its period having ended there.
fn at(enter: u64, exit: u64, dropped_at: u64) -> CaptureClock {
    CaptureClock {
        due: enter,
        enter,
        exit,
        dropped_at,
    }
}

#[test]
fn a_sample_weighs_the_cpu_up_to_its_period_end_and_the_next_the_rest() {
    let mut book = Book::new(1, 0, 0);
    assert_eq!(
        book.on_cpu_capture(at(1_000_000, 1_002_000, 0), 0),
        (1_000_000, 0)
    );
    // The next period ended at 2.002 ms in a system call that went on to 2.5 ms, where
    // the handler ran (for 2 us): the sample stands for its period, 1 ms.
    let in_kernel = CaptureClock {
        due: 2_002_000,
        enter: 2_500_000,
        exit: 2_502_000,
        dropped_at: 0,
    };
    assert_eq!(book.on_cpu_capture(in_kernel, 0), (1_000_000, 0));
    // The next one, at 3.004 ms of CPU, has the rest of the system call and its own
    // period: 1 ms, its handler's 2 us left out.
    assert_eq!(
        book.on_cpu_capture(at(3_004_000, 3_006_000, 0), 0),
        (1_000_000, 0)
    );
}

#[test]
fn cpu_before_a_dropped_capture_is_missed_not_given_to_the_next() {
    let mut book = Book::new(1, 0, 0);
    // Armed at 1 ms of CPU; first capture at 2 ms (handler until 2.01 ms).
    assert_eq!(
        book.on_cpu_capture(at(2_000_000, 2_010_000, 0), 1_000_000),
        (1_000_000, 0)
    );
    // Captures at 3 and 4 ms were dropped (ring full); the next one is at 5 ms.
    assert_eq!(
        book.on_cpu_capture(at(5_000_000, 5_010_000, 4_000_000), 1_000_000),
        (1_000_000, 1_990_000)
    );
    // A drop older than the last capture changes nothing.
    assert_eq!(
        book.on_cpu_capture(at(6_010_000, 6_020_000, 4_000_000), 1_000_000),
        (1_000_000, 0)
    );
}

#[test]
fn missed_cpu_goes_half_to_each_side_of_the_gap() {
    assert_eq!(
        split_missed(1001, Some((7, 10)), Some((9, 20))),
        [Some((7, 10, 500)), Some((9, 20, 501))]
    );
    // The same stack on both sides: one part, on the earlier sample.
    assert_eq!(
        split_missed(1000, Some((7, 10)), Some((7, 20))),
        [Some((7, 10, 1000)), None]
    );
    assert_eq!(
        split_missed(1000, Some((7, 10)), None),
        [Some((7, 10, 1000)), None]
    );
    assert_eq!(
        split_missed(1000, None, Some((9, 20))),
        [Some((9, 20, 1000)), None]
    );
    assert_eq!(split_missed(1000, None, None), [None, None]);
}
