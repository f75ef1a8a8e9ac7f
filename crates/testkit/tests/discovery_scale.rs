//! Discovery at scale, short version (the full table: `discovery-scale 100 300 1000`):
//! 15 and 45 participants with 20 endpoints each all converge within a fraction of a
//! second of virtual time, what discovery sends per participant grows about linearly
//! with the number of participants (each learns the others' endpoints), not
//! quadratically, and the engines read nothing as loss or congestion (the simulated
//! network loses nothing).

use std::time::Duration;

use ferrodds_testkit::scale::discovery_run;

#[test]
fn discovery_converges_and_grows_linearly_per_participant() {
    let small = discovery_run(15, 20, 3, Duration::from_secs(60));
    let large = discovery_run(45, 20, 3, Duration::from_secs(60));
    eprintln!("{small:?}\n{large:?}");
    for r in [&small, &large] {
        assert!(
            r.converged,
            "{} participants did not converge",
            r.participants
        );
        assert!(
            r.virtual_time < Duration::from_secs(1),
            "{} participants took {:?} to converge",
            r.participants,
            r.virtual_time
        );
        // A late joiner asks each builtin SEDP writer for its whole history: that was
        // never sent to it, so it is no loss (counted as loss, it cut the pacing rate
        // and stretched discovery of 250 participants to seconds).
        assert_eq!(
            r.lost_bytes_reported, 0,
            "loss reported in a lossless network"
        );
        assert_eq!(
            r.congestion_decreases, 0,
            "congestion in a lossless network"
        );
        // Readers whose HEARTBEAT or repairs still wait behind pacing are not unresponsive.
        assert_eq!(r.unresponsive_heartbeats_skipped, 0);
    }
    // 3× the participants: each sends to 3× as many peers. Linear per participant is a
    // ratio of about 3 (plus the fixed part of SPDP); quadratic would be about 9.
    let ratio = large.bytes_per_participant() / small.bytes_per_participant();
    assert!(
        (1.5..=4.5).contains(&ratio),
        "bytes per participant grew {ratio:.2}× for 3× the participants"
    );
    let ratio = large.datagrams_per_participant() / small.datagrams_per_participant();
    assert!(
        (1.5..=4.5).contains(&ratio),
        "datagrams per participant grew {ratio:.2}× for 3× the participants"
    );
}
