//! [`Options::parse`]: walks the arguments through the option table and applies each
//! option's value to the model.

use std::path::PathBuf;

use crate::error::OptionError;

use super::model::{
    FlowControllerName, Options, OutputFormat, PubRate, Role, MAX_BOUNDED_SEQ_SIZE, MAX_DATA_LEN,
    OVERHEAD_BYTES,
};
use super::table::Arity::{Flag, Optional, Value};
use super::table::Side::{Pub, Sub};
use super::table::{lookup, resolve, OptionSpec};
use crate::transport::{Backend, Capabilities, Support};

use super::values::{
    is_negative_number, num, num32, parse_affinity, parse_multicast_addr, parse_priorities,
    parse_rate_method, parse_scan, parse_wan_address,
};

pub(super) fn unsupported(option: &'static str, reason: &'static str) -> OptionError {
    OptionError::Unsupported { option, reason }
}

/// Why the tool refuses an option the backend does not have, or that the tool does not
/// implement.
const NOT_IN_TOOL: &str = "not implemented in FerroDDS perftest";

/// Why a `-unbounded` threshold is refused.
const UNBOUNDED_THRESHOLD_REASON: &str = "its threshold sets RTI's buffer pool (samples up to it preallocated, larger ones allocated), and FerroDDS allocates every sample's buffer as needed: give '-unbounded' without a value (the unbounded type is used either way)";

/// Why `-receiveQueueSize` is refused.
const RECEIVE_QUEUE_REASON: &str = "RTI sets the reader's initial_samples (a preallocated pool), and FerroDDS readers preallocate no samples: their queue grows as samples arrive";

/// Refuses `option` with the backend's reason (or [`NOT_IN_TOOL`] when the backend has
/// the feature but the tool does not use it).
fn refuse(option: &'static str, support: Support) -> OptionError {
    unsupported(option, support.reason().unwrap_or(NOT_IN_TOOL))
}

/// Refuses a `-transport` kind: with the backend's reason when it lacks the kind.
fn refuse_transport(option: &'static str, kind: &str, caps: &Capabilities) -> OptionError {
    if caps.transports.contains(&kind) {
        unsupported(option, NOT_IN_TOOL)
    } else {
        unsupported(option, caps.transport_limit)
    }
}

/// The key length of a `-secureEncryptionAlgorithm` value (`None`: not valid).
fn ferrodds_key_bits(v: &str) -> Option<u32> {
    match v.to_ascii_lowercase().as_str() {
        "aes-128-gcm" => Some(128),
        "aes-256-gcm" => Some(256),
        _ => None,
    }
}

impl Options {
    fn secure_mut(&mut self) -> &mut super::model::SecureOptions {
        self.secure.get_or_insert_with(Default::default)
    }

    /// Parses the arguments after the program name.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Options, OptionError> {
        let mut opts = Options::default();
        let mut explicit_pub = false;
        let mut explicit_sub = false;
        let mut used: Vec<&'static OptionSpec> = Vec::new();
        // Every argument starting with `-` is an option (values never do), so the backend
        // is known before the options are applied in order.
        let raw = args
            .iter()
            .any(|a| lookup(a.as_ref()).is_some_and(|s| s.name == "-rawTransport"));
        let tcp = args.windows(2).any(|w| {
            lookup(w[0].as_ref()).is_some_and(|s| s.name == "-transport")
                && matches!(w[1].as_ref(), "TCP" | "TLS")
        });
        let shm = args.windows(2).any(|w| {
            lookup(w[0].as_ref()).is_some_and(|s| s.name == "-transport")
                && w[1].as_ref() == "SHMEM"
        });
        let backend = if raw && tcp {
            Backend::RawTcp
        } else if raw && shm {
            Backend::RawShm
        } else if raw {
            Backend::Raw
        } else {
            Backend::Dds
        };
        let caps = backend.capabilities();
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_ref();
            let spec = resolve(arg)?;
            i += 1;
            let value = match spec.arity {
                Flag => None,
                Value => match args.get(i).map(AsRef::as_ref) {
                    Some(v) if !v.starts_with('-') => {
                        i += 1;
                        Some(v)
                    }
                    Some(v) if is_negative_number(v) => {
                        return Err(OptionError::Negative {
                            option: spec.name,
                            value: v.to_string(),
                        })
                    }
                    _ => return Err(OptionError::MissingValue(spec.name)),
                },
                Optional => match args.get(i).map(AsRef::as_ref) {
                    Some(v) if is_negative_number(v) => {
                        return Err(OptionError::Negative {
                            option: spec.name,
                            value: v.to_string(),
                        })
                    }
                    Some(v) if !v.starts_with('-') => {
                        i += 1;
                        Some(v)
                    }
                    _ => None,
                },
            };
            match spec.name {
                "-pub" => explicit_pub = true,
                "-sub" => explicit_sub = true,
                _ => {}
            }
            used.push(spec);
            opts.apply(spec.name, value.unwrap_or(""), caps)?;
        }
        if opts.help {
            return Ok(opts);
        }
        if explicit_pub && explicit_sub {
            return Err(OptionError::Conflict(
                "Cannot use '-pub' and '-sub' at the same time.",
            ));
        }
        opts.role_explicit = explicit_pub || explicit_sub;
        for spec in used {
            match (spec.side, explicit_pub, explicit_sub) {
                (Pub, _, true) => {
                    return Err(OptionError::WrongRole {
                        option: spec.name,
                        role: "-sub",
                    })
                }
                (Sub, true, _) => {
                    return Err(OptionError::WrongRole {
                        option: spec.name,
                        role: "-pub",
                    })
                }
                _ => {}
            }
        }
        opts.validate(caps)?;
        Ok(opts)
    }

    fn apply(
        &mut self,
        name: &'static str,
        v: &str,
        caps: &Capabilities,
    ) -> Result<(), OptionError> {
        match name {
            "-help" | "-h" => self.help = true,
            "-pub" => self.role = Role::Publisher,
            "-sub" => self.role = Role::Subscriber,
            "-sidMultiSubTest" => self.sid = num32(name, v, 0, 65534)?,
            "-pidMultiPubTest" => self.pid = num32(name, v, 0, 65534)?,
            "-numSubscribers" => self.num_subscribers = num32(name, v, 1, 65535)?,
            "-numPublishers" => self.num_publishers = num32(name, v, 1, 65535)?,
            "-domain" => self.domain = num32(name, v, 0, 250)?,
            "-verbosity" => self.verbosity = num32(name, v, 0, 3)?,
            "-noXmlQos" => self.no_xml_qos = true,
            "-durability" => {
                let d = num32(name, v, 0, 3)?;
                if d > caps.max_durability {
                    return Err(unsupported(name, caps.durability_limit));
                }
                self.durability = Some(d);
            }
            "-useReadThread" => self.use_read_thread = true,
            "-sendQueueSize" => self.send_queue_size = Some(num(name, v, 1, 1 << 24)?),
            "-receiveQueueSize" => {
                // RTI sets the reader's resource_limits.initial_samples: a preallocation, not
                // a limit. FerroDDS readers preallocate nothing (the queue grows as samples
                // arrive), so there is nothing to set; a limit would change the test.
                num(name, v, 1, 1 << 24)?;
                return Err(unsupported(name, RECEIVE_QUEUE_REASON));
            }
            "-receiveBufferSize" => {
                self.receive_buffer_size = Some(num(name, v, 1, 1 << 30)?);
            }
            "-sendBufferSize" => self.send_buffer_size = Some(num(name, v, 1, 1 << 30)?),
            "-latencyTest" => self.latency_test = true,
            "-latencyCount" => self.latency_count = Some(num(name, v, 1, u64::from(u32::MAX))?),
            "-numIter" => self.num_iter = Some(num(name, v, 1, u64::MAX)?),
            "-executionTime" => self.execution_time = num(name, v, 0, 100_000_000)?,
            "-initialBurstSize" => self.initial_burst_size = Some(num(name, v, 0, 1 << 24)?),
            "-pubRate" => {
                let (rate, method) = parse_rate_method(name, v)?;
                if !(1..=10_000_000).contains(&rate) {
                    return Err(OptionError::BadValue {
                        option: name,
                        value: v.to_string(),
                        reason: "the rate must be between 1 and 10000000",
                    });
                }
                self.pub_rate = Some(PubRate { rate, method });
            }
            "-pubRatebps" => {
                let (bps, method) = parse_rate_method(name, v)?;
                if bps == 0 {
                    return Err(OptionError::BadValue {
                        option: name,
                        value: v.to_string(),
                        reason: "the rate must be positive",
                    });
                }
                self.pub_rate_bps = Some((bps, method));
            }
            "-sleep" => self.sleep_ms = num(name, v, 1, 1_000_000)?,
            "-spin" => self.spin = num(name, v, 0, u64::from(u32::MAX))?,
            "-dataLen" => self.data_len = num(name, v, OVERHEAD_BYTES, MAX_DATA_LEN)?,
            "-keyed" => self.keyed = true,
            "-instances" => self.instances = Some(num(name, v, 1, 1 << 24)?),
            "-writeInstance" => self.write_instance = Some(num(name, v, 0, 1 << 24)?),
            "-unbounded" => {
                if !v.is_empty() {
                    // RTI's threshold is the writer/reader pool_buffer_max_size: samples up
                    // to it come from preallocated buffers, larger ones are allocated. The
                    // type is the unbounded one either way, so only the value is refused.
                    num(name, v, OVERHEAD_BYTES, MAX_BOUNDED_SEQ_SIZE)?;
                    return Err(unsupported(name, UNBOUNDED_THRESHOLD_REASON));
                }
                self.unbounded = true;
            }
            "-batchSize" => self.batch_size = Some(num(name, v, 0, 65507)?),
            "-bestEffort" => self.best_effort = true,
            "-transport" => {
                match v {
                    "UDPv4" | "TCP" | "TLS" | "UDPv4_WAN" | "SHMEM"
                        if caps.transports.contains(&v) => {}
                    "UDPv4" | "UDPv6" | "SHMEM" | "TCP" | "TLS" | "DTLS" | "WAN" | "UDPv4_WAN" => {
                        return Err(refuse_transport(name, v, caps))
                    }
                    _ => {
                        return Err(OptionError::BadValue {
                            option: name,
                            value: v.to_string(),
                            reason:
                                "expected UDPv4, UDPv6, SHMEM, TCP, TLS, DTLS, WAN or UDPv4_WAN",
                        })
                    }
                }
                self.transport = Some(v.to_string());
            }
            "-nic" | "-allowInterfaces" => self.nic = Some(v.to_string()),
            "-peer" => {
                if self.peers.len() >= 1023 {
                    return Err(OptionError::BadValue {
                        option: "-peer",
                        value: v.to_string(),
                        reason: "at most 1023 peers",
                    });
                }
                self.peers.push(v.to_string());
            }
            "-multicast" => self.multicast = true,
            "-nomulticast" => self.no_multicast = true,
            "-rawTransport" => self.raw = true,
            "-noBlockingSockets" => self.no_blocking_sockets = true,
            "-cpu" => self.cpu = true,
            "-threadPriorities" => self.thread_priorities = Some(parse_priorities(v)?),
            "-threadCPUAffinity" => self.thread_cpu_affinity = Some(parse_affinity(v)?),
            "-pinMemory" => self.pin_memory = true,
            "-noPrintIntervals" => self.no_print_intervals = true,
            "-outputFormat" => {
                self.output_format = match v.to_ascii_lowercase().as_str() {
                    "csv" => OutputFormat::Csv,
                    "json" => OutputFormat::Json,
                    "legacy" => OutputFormat::Legacy,
                    _ => {
                        return Err(OptionError::BadValue {
                            option: name,
                            value: v.to_string(),
                            reason: "expected csv, json or legacy",
                        })
                    }
                }
            }
            "-noOutputHeaders" => self.no_output_headers = true,
            "-outputFile" => self.output_file = Some(PathBuf::from(v)),
            "-latencyFile" => {
                let f = if v.is_empty() {
                    "latency_samples.csv"
                } else {
                    v
                };
                self.latency_file = Some(PathBuf::from(f));
            }
            "-asynchronous" => self.asynchronous = true,
            "-flowController" => {
                self.flow_controller = match v {
                    "default" => FlowControllerName::Default,
                    "1Gbps" => FlowControllerName::Gbps1,
                    "10Gbps" => FlowControllerName::Gbps10,
                    _ => {
                        return Err(OptionError::BadValue {
                            option: name,
                            value: v.to_string(),
                            reason: "expected default, 1Gbps or 10Gbps",
                        })
                    }
                }
            }
            "-scan" => self.scan = Some(parse_scan(v)?),
            "-qosFile" | "-qosProfile" if caps.xml_qos == Support::Yes => {
                self.qos_file = Some(PathBuf::from(v));
            }
            "-qosLibrary" if caps.xml_qos == Support::Yes => self.qos_library = v.to_string(),
            "-qosFile" | "-qosLibrary" | "-qosProfile" => return Err(refuse(name, caps.xml_qos)),
            "-networkCapture" if caps.network_capture == Support::Yes => {
                self.network_capture = true;
            }
            "-doNotDropNetworkCapture" if caps.network_capture == Support::Yes => {
                self.keep_network_capture = true;
            }
            "-networkCaptureRemoveUserData" if caps.network_capture == Support::Yes => {
                self.network_capture_no_user_data = true;
            }
            "-networkCapture" | "-doNotDropNetworkCapture" | "-networkCaptureRemoveUserData" => {
                return Err(refuse(name, caps.network_capture))
            }
            "-cft" => {
                return Err(refuse(name, caps.content_filters));
            }
            "-multicastAddr" if caps.multicast_address == Support::Yes => {
                // RTI: implies -multicast.
                self.multicast_groups = Some(parse_multicast_addr(v)?);
                self.multicast = true;
            }
            "-multicastAddr" => return Err(refuse(name, caps.multicast_address)),
            "-zeroCopy" if caps.dds_entities != Support::Yes => {
                return Err(refuse(name, caps.dds_entities))
            }
            "-zeroCopy" if caps.transports.contains(&"SHMEM") => self.zero_copy = true,
            "-zeroCopy" => return Err(refuse_transport(name, "SHMEM", caps)),
            "-checkConsistency" if caps.dds_entities != Support::Yes => {
                return Err(refuse(name, caps.dds_entities))
            }
            "-checkConsistency" => self.check_consistency = true,
            "-loaningSendReceive" if caps.dds_entities != Support::Yes => {
                return Err(refuse(name, caps.dds_entities))
            }
            "-loaningSendReceive" => self.loaning = true,
            "-enableSharedMemory" if caps.dds_entities != Support::Yes => {
                return Err(OptionError::Conflict(
                    "'-enableSharedMemory' is not used with -rawTransport.",
                ))
            }
            "-enableSharedMemory" if caps.transports.contains(&"SHMEM") => {
                self.enable_shared_memory = true;
            }
            "-enableSharedMemory" => return Err(refuse_transport(name, "SHMEM", caps)),
            "-enableTCP" if caps.dds_entities != Support::Yes => {
                return Err(OptionError::Conflict(
                    "'-enableTCP' is not used with -rawTransport: use '-transport TCP'.",
                ))
            }
            "-enableTCP" if caps.transports.contains(&"TCP") => self.enable_tcp = true,
            "-enableTCP" => return Err(refuse_transport(name, "TCP", caps)),
            "-transportVerbosity" if caps.dds_entities == Support::Yes => {
                self.transport_verbosity = Some(num32(name, v, 0, 3)?);
            }
            "-transportPublicAddress" if caps.transports.contains(&"UDPv4_WAN") => {
                self.wan_public_address = Some(parse_wan_address(name, v)?);
            }
            "-transportHostPort" if caps.transports.contains(&"UDPv4_WAN") => {
                self.wan_host_port = Some(num(name, v, 1, 65535)? as u16);
            }
            "-transportCertAuthority" if caps.transports.contains(&"TLS") => {
                self.tls_ca_file = Some(v.to_string());
            }
            "-transportCertFile" if caps.transports.contains(&"TLS") => {
                self.tls_cert_file = Some(v.to_string());
            }
            "-transportPrivateKey" if caps.transports.contains(&"TLS") => {
                self.tls_key_file = Some(v.to_string());
            }
            "-transportServerBindPort" if caps.transports.contains(&"TCP") => {
                self.tcp_server_port = Some(num(name, v, 1, 65535)? as u16);
            }
            "-enableUDPv6" => return Err(refuse_transport(name, "UDPv6", caps)),
            n if (n.starts_with("-secure") || n == "-lightWeightSecurity")
                && caps.security != Support::Yes =>
            {
                return Err(refuse(n, caps.security))
            }
            "-secureGovernanceFile" => self.secure_mut().governance = Some(v.to_string()),
            "-securePermissionsFile" => self.secure_mut().permissions = Some(v.to_string()),
            "-secureCertAuthority" => self.secure_mut().ca = Some(v.to_string()),
            "-secureCertFile" => self.secure_mut().cert = Some(v.to_string()),
            "-securePrivateKey" => self.secure_mut().key = Some(v.to_string()),
            "-secureEncryptionAlgorithm" => {
                if ferrodds_key_bits(v).is_none() {
                    return Err(OptionError::BadValue {
                        option: name,
                        value: v.to_string(),
                        reason: "valid values are aes-128-gcm and aes-256-gcm (the builtin AES-GCM-GMAC plugin's key lengths)",
                    });
                }
                self.secure_mut().encryption_algorithm = Some(v.to_ascii_lowercase());
            }
            "-secureSign" => self.secure_mut().legacy_sign = true,
            "-secureEncryptData" => self.secure_mut().legacy_encrypt_data = true,
            "-secureEncryptSM" => self.secure_mut().legacy_encrypt_submessage = true,
            "-secureEncryptBoth" => self.secure_mut().legacy_encrypt_both = true,
            "-secureEncryptDiscovery" => self.secure_mut().legacy_encrypt_discovery = true,
            "-secureEnableAAD" => {
                return Err(unsupported(
                    name,
                    "additional authenticated data is an RTI extension of the cryptography plugin, not part of the OMG builtin AES-GCM-GMAC plugin that FerroDDS implements (and interoperates with)",
                ))
            }
            "-secureDebug" => {
                return Err(unsupported(
                    name,
                    "FerroDDS's security plugins have no log level of their own: perftest prints each failed authentication of a remote participant (certificate, handshake or permissions) with its reason while it waits for discovery",
                ))
            }
            "-secureLibrary" => {
                return Err(unsupported(
                    name,
                    "FerroDDS's security plugins are built in (no dynamic library to load)",
                ))
            }
            "-lightWeightSecurity" | "-securePSK" | "-securePSKAlgorithm" | "-secureRtpsHmacOnly" => {
                return Err(unsupported(
                    name,
                    "pre-shared-key (Lightweight) security is RTI's own plugin, not the OMG DDS Security builtin plugins; FerroDDS implements PKI-DH, Permissions and AES-GCM-GMAC (use -secureGovernanceFile)",
                ))
            }
            n if n.starts_with("-transport") => return Err(refuse(n, caps.transport_settings)),
            "-lowResolutionClock"
            | "-showSerializationTime"
            | "-loadDataFromFile"
            | "-maximumAllocableBufferSize"
            | "-writerStats"
            | "-cacheStats" => return Err(unsupported(name, NOT_IN_TOOL)),
            "-showResourceLimits" if caps.dds_entities == Support::Yes => {
                self.show_resource_limits = true;
            }
            "-showResourceLimits" => {
                return Err(OptionError::Conflict(
                    "'-showResourceLimits' shows DDS resource limits: raw sockets have none.",
                ))
            }
            "-waitsetDelayUsec" | "-waitsetEventCount" => {
                return Err(unsupported(
                    name,
                    "FerroDDS perftest always receives in a plain read thread",
                ))
            }
            "-instanceHashBuckets" | "-messageSizeMax" | "-preallocateFragmentedSamples" => {
                return Err(unsupported(name, caps.missing_qos))
            }
            _ => return Err(unsupported(name, caps.missing_qos)),
        }
        Ok(())
    }
}
