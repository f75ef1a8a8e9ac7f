//! FerroDDS's log on stderr, as RTI Perftest's `-verbosity` and `-transportVerbosity`
//! select it: `-verbosity` 0 silent, 1 errors (default), 2 warnings, 3 everything;
//! `-transportVerbosity` (the transports: `ferrodds_transport`) 0 errors, 1 warnings,
//! 2 connections (dialled, accepted, closed), 3 everything; the transports follow
//! `-verbosity` when it is not given.

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::options::Options;

/// The filter for the options (the perftest tool itself prints on its own).
pub fn filter(opts: &Options) -> Targets {
    let general = match opts.verbosity {
        0 => LevelFilter::OFF,
        1 => LevelFilter::ERROR,
        2 => LevelFilter::WARN,
        _ => LevelFilter::DEBUG,
    };
    let transport = match opts.transport_verbosity {
        None => general,
        Some(0) => LevelFilter::ERROR,
        Some(1) => LevelFilter::WARN,
        Some(2) => LevelFilter::INFO,
        Some(_) => LevelFilter::TRACE,
    };
    Targets::new()
        .with_default(general)
        .with_target("ferrodds_transport", transport)
}

/// Installs the log on stderr (once per process; later calls do nothing).
pub fn init(opts: &Options) {
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(std::io::stderr);
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(filter(opts))
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    fn enabled(args: &[&str], target: &str, level: Level) -> bool {
        let o = Options::parse(args).unwrap();
        filter(&o).would_enable(target, &level)
    }

    #[test]
    fn levels_follow_the_options() {
        // Defaults: errors only, everywhere.
        assert!(enabled(&[], "ferrodds::runtime", Level::ERROR));
        assert!(!enabled(&[], "ferrodds::runtime", Level::WARN));
        assert!(!enabled(&[], "ferrodds_transport::tcp", Level::WARN));
        assert!(!enabled(&["-verbosity", "0"], "ferrodds", Level::ERROR));
        assert!(enabled(&["-verbosity", "3"], "ferrodds", Level::DEBUG));
        // The transport follows -verbosity unless told otherwise.
        assert!(enabled(
            &["-verbosity", "2"],
            "ferrodds_transport::tcp",
            Level::WARN
        ));
        let t2 = ["-transportVerbosity", "2"];
        assert!(enabled(&t2, "ferrodds_transport::tcp", Level::INFO));
        assert!(!enabled(&t2, "ferrodds_transport::tcp", Level::DEBUG));
        assert!(!enabled(&t2, "ferrodds::runtime", Level::INFO));
        assert!(enabled(
            &["-transportVerbosity", "3"],
            "ferrodds_transport::udp",
            Level::TRACE
        ));
    }
}
