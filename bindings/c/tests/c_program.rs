//! Builds the C programs with the system C compiler (`cc`) against `include/ferrodds.h`
//! and the crate's shared library, and runs them on loopback with a time limit:
//! `tests/c/api_test.c`, `tests/c/pingpong.c` (two processes, briefly) and the example of the README's "C API" section (extracted from
//! the README, so the README shows code that compiles and runs).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Builds the shared library and returns the directory holding `libferrodds_c.so`.
/// `cargo test` does not refresh the cdylib of the crate under test, so it is built here
/// with the same cargo, target directory and profile (once per test binary).
fn lib_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .expect("target directory")
                .to_path_buf();
            let out = Command::new(env!("CARGO"))
                .args(["build", "-p", "ferrodds-c", "--lib", "--target-dir"])
                .arg(&target)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .expect("start cargo");
            assert!(
                out.status.success(),
                "cargo build -p ferrodds-c failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let dir = target.join("debug");
            assert!(
                dir.join("libferrodds_c.so").exists(),
                "no libferrodds_c.so in {}",
                dir.display()
            );
            dir
        })
        .clone()
}

/// Compiles `source` into `exe`; panics with the compiler's output on failure.
fn compile(source: &Path, exe: &Path) {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = lib_dir();
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(source)
        .arg("-o")
        .arg(exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lferrodds_c", "-lpthread"])
        .output()
        .expect("the system C compiler `cc` could not be started");
    assert!(
        out.status.success(),
        "cc {} failed:\n{}{}",
        source.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `exe` for at most `limit`; returns its stdout, panics on failure or timeout.
fn run(exe: &Path, args: &[&str], limit: Duration) -> String {
    let mut child = Command::new(exe)
        .args(args)
        .env_remove("FERRODDS_INTERFACE")
        .env_remove("FERRODDS_PEERS")
        .env_remove("FERRODDS_MULTICAST")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the C program");
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait for the C program").is_some() {
            break;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            let out = child.wait_with_output().expect("collect output");
            panic!(
                "{} did not finish within {limit:?}:\n{}{}",
                exe.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("collect output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} failed ({}):\n{stdout}{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

#[test]
fn c_api_test_program_passes() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/api_test.c");
    let exe = tmp("ferrodds_c_api_test");
    compile(&src, &exe);
    let out = run(&exe, &[], Duration::from_secs(90));
    assert!(out.contains("api_test: ok"), "{out}");
}

#[test]
fn c_ping_pong_between_two_processes() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/pingpong.c");
    let exe = tmp("ferrodds_c_pingpong");
    compile(&src, &exe);
    let pong_exe = exe.clone();
    let pong =
        std::thread::spawn(move || run(&pong_exe, &["pong", "139"], Duration::from_secs(60)));
    let out = run(&exe, &["ping", "139", "500", "32"], Duration::from_secs(60));
    assert!(out.contains("pingpong: 500 round trips of 32 B"), "{out}");
    pong.join().expect("pong process");
}

/// The C code block of the README's "C API" section.
fn readme_example() -> String {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text =
        std::fs::read_to_string(&readme).unwrap_or_else(|e| panic!("{}: {e}", readme.display()));
    let section = text
        .split("\n## C API")
        .nth(1)
        .unwrap_or_else(|| panic!("{}: no \"## C API\" section", readme.display()));
    let block = section
        .split("```c\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .unwrap_or_else(|| panic!("{}: the C API section has no ```c block", readme.display()));
    block.to_owned()
}

#[test]
fn readme_c_example_compiles_and_runs() {
    let src = tmp("ferrodds_readme_example.c");
    std::fs::write(&src, readme_example()).unwrap();
    let exe = tmp("ferrodds_readme_example");
    compile(&src, &exe);
    let out = run(&exe, &[], Duration::from_secs(60));
    assert!(out.contains("received x=42"), "{out}");
}
