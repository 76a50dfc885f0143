//! The agent's loop task: runs turns as they are begun; between them,
//! goes idle, lets the features hand a child's news on, then begin
//! more work.

use super::shared::Core;
use super::turn;
use dsh_protocol::catalog::TurnEndReason;
use std::sync::Arc;

/// Runs turns as they are begun, until the handle is dropped.
pub(crate) async fn run(core: Arc<Core>) {
    loop {
        core.wake.notified().await;
        loop {
            let Some(pending) = core.state().pending.take() else {
                break;
            };
            let reason = turn::run(&core, pending.turn, pending.claimed).await;
            if !settle(&core, pending.turn, reason) {
                // The next turn was begun: the loop runs it.
                continue;
            }
            // The waiters released at this idle answer first; then the
            // features may begin more work (a goal's next round: the loop
            // runs the turn it began).
            core.let_waiters_answer().await;
            for feature in core.hooks.iter() {
                feature.idle(&core);
            }
        }
    }
}

/// Ends turn `turn` with `reason`; then begins the next turn (returns
/// `false`) or goes idle (returns `true`).
fn settle(core: &Core, turn: u32, reason: TurnEndReason) -> bool {
    let mut state = core.state();
    let continues = !matches!(reason, TurnEndReason::Error { .. });
    state.end_turn(turn, reason.clone());
    for feature in core.hooks.iter() {
        feature.turn_ended(&mut state, &reason);
    }
    if continues && (!state.next_turn.is_empty() || state.steered) {
        state.begin_turn();
        state.log.flush();
        return false;
    }
    if core.lineage.parent.is_none() {
        state.go_idle();
        state.log.flush();
        return true;
    }
    // A child's news goes to its parent (the features hand it on) once it
    // is idle; its waiters are released after that (`session/wait` on the
    // tree never sees a gap between the two).
    state.go_idle_quietly();
    state.log.flush();
    drop(state);
    for feature in core.hooks.iter() {
        feature.settled(core);
    }
    // A message delivered since (the parent answering before it had the
    // news) began a new turn: its waiters wait on.
    let mut state = core.state();
    if !state.running {
        state.release_waiters();
    }
    true
}
