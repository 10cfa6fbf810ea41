//! Fuzzes `config.toml` parsing and the settings a page may change
//! (`shared::base::config::Config::parse`, `scorer::web::settings::describe`
//! and `update`). The input, split at its first NUL byte, is a `config.toml`
//! and a JSON object of changes. Checks beyond "no panic": a change that is
//! saved leaves a file every binary reads, and no setting that names a
//! program or opens the server (`*.command`, `web.*`) changes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scorer::web::settings;
use shared::base::config::Config;
use shared::base::paths::Paths;

fn locked(config: &Config) -> Vec<(String, serde_json::Value)> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, serde_json::Value)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&key, x, out);
                }
            }
            x => {
                if settings::locked(prefix).is_some() {
                    out.push((prefix.to_owned(), x.clone()));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk("", &serde_json::to_value(config).unwrap_or_default(), &mut out);
    out
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let text = String::from_utf8_lossy(&data[..split]);
    let before = Config::parse(&text);
    let dir = std::env::temp_dir().join(format!("engram-fuzz-config-{}", std::process::id()));
    let paths = Paths::at(&dir);
    if std::fs::create_dir_all(&dir).is_err() || std::fs::write(paths.config(), text.as_bytes()).is_err() {
        return;
    }
    let _ = settings::describe(&paths);
    let Ok(changes) = serde_json::from_slice::<serde_json::Value>(data.get(split + 1..).unwrap_or_default()) else {
        return;
    };
    if settings::update(&paths, &changes).is_ok() {
        let after = Config::load(&paths.config()).expect("a saved config.toml loads");
        if let Ok(before) = before {
            assert_eq!(locked(&after), locked(&before), "a locked setting changed");
        }
    }
});
