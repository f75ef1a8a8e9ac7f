//! Entry point: parse, apply system settings, print the start-up summary, pick the
//! backend and run the role.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use crate::error::PerftestError;
use crate::harness::{run_publisher, run_subscriber, RunContext, STOP};
use crate::options::{help_text, BatchingState, Options, RateMethod, Role};
use crate::output::{Printer, PrinterConfig};
use crate::qos_profiles::qos_source;
use crate::system;
use crate::transport::raw::RawTransport;
#[cfg(feature = "shared-memory")]
use crate::transport::raw_shm::RawShmTransport;
use crate::transport::raw_tcp::RawTcpTransport;
use crate::transport::Backend;
use crate::transport::{Support, Transport};

/// Version line printed first on stderr.
pub fn version_line(raw: bool) -> String {
    let middleware = if raw {
        "Raw Transport".to_string()
    } else {
        format!("FerroDDS {}", env!("CARGO_PKG_VERSION"))
    };
    format!(
        "FerroDDS Perftest {} (RTI Perftest 4.3 compatible; {middleware})",
        env!("CARGO_PKG_VERSION")
    )
}

/// The start-up summary (spec 3.1), without the progress lines.
pub fn startup_summary(opts: &Options, batching: BatchingState, transport: &[String]) -> String {
    startup_summary_with(opts, batching, transport, &[])
}

/// [`startup_summary`] with a "Secure Configuration" block of `secure` lines (none when
/// empty: DDS Security off).
pub fn startup_summary_with(
    opts: &Options,
    batching: BatchingState,
    transport: &[String],
    secure: &[String],
) -> String {
    let mut s = String::new();
    let mut line = |l: &str| {
        s.push_str(l);
        s.push('\n');
    };
    line(&version_line(opts.raw));
    line("");
    let is_pub = opts.role == Role::Publisher;
    if is_pub {
        if opts.latency_test {
            line("Mode: LATENCY TEST (Ping-Pong test)");
        } else {
            line("Mode: THROUGHPUT TEST");
            line("      (Use \"-latencyTest\" for Latency Mode)");
        }
        line("");
    }
    line("Perftest Configuration:");
    if opts.raw {
        line("\tMiddleware: Raw Transport");
    }
    line(&format!(
        "\tReliability: {}",
        if opts.backend() == Backend::RawTcp && opts.transport.as_deref() == Some("TLS") {
            "Reliable (raw TLS stream)"
        } else if opts.backend() == Backend::RawTcp {
            "Reliable (raw TCP stream)"
        } else if opts.backend() == Backend::RawShm {
            "Best Effort (raw shared memory)"
        } else if opts.raw {
            "Best Effort (raw sockets)"
        } else if opts.best_effort {
            "Best Effort"
        } else {
            "Reliable"
        }
    ));
    line(&format!(
        "\tKeyed: {}",
        if opts.keyed { "Yes" } else { "No" }
    ));
    if is_pub {
        line(&format!("\tPublisher ID: {}", opts.pid));
        line(&format!(
            "\tLatency count: 1 latency sample every {} samples",
            opts.effective_latency_count()
        ));
    } else {
        line(&format!("\tSubscriber ID: {}", opts.sid));
    }
    line(&format!("\tData Size: {}", opts.data_len));
    if is_pub {
        match batching {
            BatchingState::On(b) => line(&format!(
                "\tBatching: {b} Bytes (Use \"-batchSize 0\" to disable batching)"
            )),
            BatchingState::Off => line("\tBatching: No (Use \"-batchSize\" to setup batching)"),
            BatchingState::Disabled(why) => {
                line("\tBatching: Disabled by RTI Perftest.");
                line(&format!("\t\t  {why}"));
            }
            BatchingState::Unavailable => {
                line("\tBatching: No (batching is not available in FerroDDS yet)")
            }
        }
        match opts.pub_rate {
            Some(r) => line(&format!(
                "\tPublication Rate: {} Samples/s ({})",
                r.rate,
                match r.method {
                    RateMethod::Spin => "Spin",
                    RateMethod::Sleep => "Sleep",
                }
            )),
            None => line("\tPublication Rate: Unlimited (Not set)"),
        }
        if opts.execution_time > 0 {
            line(&format!(
                "\tExecution time: {} seconds",
                opts.execution_time
            ));
        } else {
            line(&format!(
                "\tNumber of samples: {}",
                opts.effective_num_iter()
            ));
        }
    }
    line(if opts.raw {
        "\tReceive using: Read thread"
    } else if opts.use_read_thread {
        "\tReceive using: WaitSets"
    } else {
        "\tReceive using: Listeners"
    });
    line(&format!("\tDomain: {}", opts.domain));
    line("\tDynamic Data: No");
    line("\tCRC Enabled: No");
    line("\tMessage Length Header Extension Enabled: No");
    line("\tFlatData: No");
    // -loaningSendReceive over shared memory does what -zeroCopy does.
    line(match (opts.by_reference(), is_pub) {
        (true, true) => "\tZero Copy: Yes (writer loans: samples of 16 KiB or more in shared memory for subscribers on this host; smaller ones as bytes)",
        // Only a reliable writer waits for the acknowledgement that keeps a chunk in place.
        (true, false) if opts.best_effort => "\tZero Copy: Yes (samples of 16 KiB or more from publishers on this host copied once out of their shared memory on receipt: best effort holds no acknowledgement to keep them in place; smaller ones copied)",
        (true, false) if opts.check_consistency => "\tZero Copy: Yes (samples of 16 KiB or more from publishers on this host read in place, in their shared memory, each checked for consistency; smaller ones copied)",
        (true, false) => "\tZero Copy: Yes (samples of 16 KiB or more from publishers on this host read in place, in their shared memory; smaller ones copied)",
        (false, _) => "\tZero Copy: No",
    });
    if opts.loaning {
        line(if is_pub {
            "\tLoaning Send/Receive: Yes (throughput samples written through writer loans)"
        } else {
            "\tLoaning Send/Receive: Yes (throughput samples taken in their serialized form)"
        });
    }
    if is_pub {
        if opts.asynchronous {
            line("\tAsynchronous Publishing: Yes");
            line(&format!(
                "\tFlow Controller: {}",
                opts.flow_controller.name()
            ));
        } else {
            line("\tAsynchronous Publishing: No");
        }
    }
    if let Some(sizes) = &opts.scan {
        let list: Vec<String> = sizes.iter().map(u64::to_string).collect();
        line(&format!(
            "\tScan: {} ({} seconds per size)",
            list.join(":"),
            opts.execution_time
        ));
    }
    // Raw sockets have no QoS; a DDS run names the profiles file it reads (RTI's
    // `Disabled` for the compiled-in copy).
    line(&format!(
        "\tXML File: {}",
        if opts.backend() == Backend::Dds {
            qos_source(opts).summary()
        } else {
            "Disabled".to_string()
        }
    ));
    line(if opts.network_capture {
        "\tNetwork capture: Yes"
    } else {
        "\tNetwork capture: No"
    });
    if let Some(p) = opts.thread_priorities {
        line(&format!(
            "\tThread priorities: main {:?}, receive {:?}, event {:?} (SCHED_FIFO)",
            p.main, p.receive, p.event
        ));
    }
    if let Some(a) = &opts.thread_cpu_affinity {
        line(&format!(
            "\tThread CPU affinity: main {:?}, receive {:?}, event {:?}",
            a.main, a.receive, a.event
        ));
    }
    if opts.pin_memory {
        line("\tPinned memory: Yes (mlockall)");
    }
    if opts.large_data() && !opts.raw {
        line(&format!(
            "[IMPORTANT]: -datalen ({}) is greater than 65498. Samples will be fragmented.",
            opts.data_len
        ));
        line("[IMPORTANT]: Using the Unbounded Sequence Type.");
    }
    line("");
    line("Transport Configuration:");
    for t in transport {
        line(&format!("\t{t}"));
    }
    line("");
    if !secure.is_empty() {
        line("Secure Configuration:");
        for t in secure {
            line(&format!("\t{t}"));
        }
        line("");
    }
    s
}

fn open_output(opts: &Options) -> Result<Box<dyn Write + Send>, PerftestError> {
    Ok(match &opts.output_file {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(PerftestError::io("opening the -outputFile"))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout())),
    })
}

#[cfg(feature = "dds")]
fn dds_transport(
    opts: &Options,
    batching: BatchingState,
) -> Result<Box<dyn Transport>, PerftestError> {
    Ok(Box::new(crate::transport::dds::DdsTransport::new(
        opts, batching,
    )?))
}

#[cfg(not(feature = "dds"))]
fn dds_transport(
    _opts: &Options,
    _batching: BatchingState,
) -> Result<Box<dyn Transport>, PerftestError> {
    Err(PerftestError::NotAvailable(
        "DDS mode: middleware not available in this build (enable the `dds` feature, or use -rawTransport)",
    ))
}

/// Runs perftest with `args` (without the program name); returns the exit code.
pub fn run(args: &[String]) -> i32 {
    let opts = match Options::parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            eprintln!("Use '-help' for the list of options.");
            return 1;
        }
    };
    if opts.help {
        print!("{}", help_text());
        return 0;
    }
    crate::logging::init(&opts);
    match run_opts(opts) {
        Ok(()) => {
            eprintln!("Test ended.");
            0
        }
        Err(e) => {
            eprintln!("Error: {e}");
            2
        }
    }
}

fn run_opts(opts: Options) -> Result<(), PerftestError> {
    // Ctrl-C: stop the loops and print what was measured; a second Ctrl-C exits at once.
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    if opts.pin_memory {
        system::lock_memory()?;
    }
    if let Some(a) = &opts.thread_cpu_affinity {
        system::pin_current_thread(&a.main)?;
    }
    if let Some(p) = opts.thread_priorities {
        system::set_current_thread_priority(p.main)?;
    }
    let caps = opts.backend().capabilities();
    let batching = opts.batching(caps.batching == Support::Yes);
    if let (BatchingState::Unavailable, true, Support::No(reason)) = (
        batching,
        opts.batch_size.is_some_and(|b| b > 0),
        caps.batching,
    ) {
        return Err(PerftestError::Option(
            crate::error::OptionError::Unsupported {
                option: "-batchSize",
                reason,
            },
        ));
    }
    let mut transport: Box<dyn Transport> = if opts.raw {
        let batch = match batching {
            BatchingState::On(b) => Some(b as usize),
            _ => None,
        };
        if opts.backend() == Backend::RawTcp {
            Box::new(RawTcpTransport::new(&opts, batch)?)
        } else if opts.backend() == Backend::RawShm {
            raw_shm_transport(&opts, batch)?
        } else {
            Box::new(RawTransport::new(&opts, batch)?)
        }
    } else {
        dds_transport(&opts, batching)?
    };
    // RTI's receive (Y/B) and event (Z/D) parts: FerroDDS's own threads, running now that the
    // participant exists (the harness sets them again after discovery, for the receive
    // threads of TCP/TLS connections started meanwhile).
    let mut described = transport.describe();
    if !opts.raw {
        let changed = system::apply_to_middleware_threads(
            opts.thread_cpu_affinity.as_ref(),
            opts.thread_priorities,
        )?;
        if !changed.is_empty() {
            described.push(format!("Middleware threads set: {}", changed.join(", ")));
        }
    }
    eprint!(
        "{}",
        startup_summary_with(
            &opts,
            batching,
            &described,
            &transport.secure_configuration()
        )
    );
    let printer = Printer::new(
        PrinterConfig {
            format: opts.output_format,
            print_intervals: !opts.no_print_intervals,
            print_headers: !opts.no_output_headers,
            cpu: opts.cpu,
        },
        open_output(&opts)?,
    );
    let ctx = RunContext {
        opts,
        batching,
        printer: Arc::new(Mutex::new(printer)),
    };
    let result = match ctx.opts.role {
        Role::Publisher => run_publisher(&ctx, transport.as_mut()),
        Role::Subscriber => run_subscriber(&ctx, transport.as_mut()),
    };
    for line in transport.finish_capture() {
        eprintln!("{line}");
    }
    for line in transport.resource_report(ctx.opts.show_resource_limits) {
        eprintln!("{line}");
    }
    result
}

/// The raw shared-memory backend.
#[cfg(feature = "shared-memory")]
fn raw_shm_transport(
    opts: &Options,
    batch: Option<usize>,
) -> Result<Box<dyn Transport>, PerftestError> {
    Ok(Box::new(RawShmTransport::new(opts, batch)?))
}

/// Without the `shared-memory` feature the option parser refuses `-transport SHMEM`.
#[cfg(not(feature = "shared-memory"))]
fn raw_shm_transport(
    _opts: &Options,
    _batch: Option<usize>,
) -> Result<Box<dyn Transport>, PerftestError> {
    Err(PerftestError::NotAvailable(
        "raw shared memory: this perftest was built without the `shared-memory` feature",
    ))
}
