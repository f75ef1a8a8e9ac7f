//! Discovery at scale, short version (the full table: `discovery-scale 100 300 1000`):
//! 15 and 45 participants with 20 endpoints each all converge, and what discovery sends per
//! participant grows about linearly with the number of participants (each learns the
//! others' endpoints), not quadratically.

use std::time::Duration;

use ferrodds_testkit::scale::discovery_run;

#[test]
fn discovery_converges_and_grows_linearly_per_participant() {
    let small = discovery_run(15, 20, 3, Duration::from_secs(60));
    let large = discovery_run(45, 20, 3, Duration::from_secs(60));
    eprintln!("{small:?}\n{large:?}");
    assert!(small.converged && large.converged);
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
