//! Fuzzes hook input: a hook's stdin as every harness sends it, read by
//! `HookInput::parse`, then what each hook derives from it without IO (the
//! harness, the session key, the project name, the write-side events).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::domain::hook::{HookEvent, HookInput, project_of};
use shared::base::time::Ts;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = HookInput::parse(data) else { return };
    for explicit in [None, Some("claude"), Some("codex")] {
        let harness = input.harness(explicit);
        let _ = input.session_key(harness);
        for event in HookEvent::ALL {
            let _ = ingestor::hook::events_for(event, &input, harness, Ts(1_700_000_000_000));
        }
    }
    if let Some(cwd) = input.cwd.as_deref() {
        let _ = project_of(cwd);
    }
});
