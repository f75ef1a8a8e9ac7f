//! `engine-seed PATH`: writes the recorded session that seeds the `engine_datagrams` fuzz
//! target (`ferrodds_testkit::engine_input::Victim::record_seed`) to PATH. Run it again when
//! the engine's wire behaviour changes (the committed seed is under
//! `fuzz/corpus-seeds/engine_datagrams/`).
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: engine-seed PATH");
        return ExitCode::from(2);
    };
    let seed = ferrodds_testkit::engine_input::Victim::record_seed();
    match std::fs::write(&path, &seed) {
        Ok(()) => {
            println!("{} bytes written to {path}", seed.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("engine-seed: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
