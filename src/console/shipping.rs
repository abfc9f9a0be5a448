//! What the app does when asked to ship: `P` checks that the run has ended and reads the
//! offer on a job; the offer is shown when read; the outcome becomes a notice.

use super::app::App;
use super::effect::Effect;
use super::ship_offer::ShipOffer;
use crate::ship::preview::Preview;

impl App {
    /// `P`: reads what would be sent, once the run has ended.
    pub(super) fn ship_asked(&mut self) {
        // A replay's cursor may not have reached the log's end: whether the run ended is the
        // log's fact, which reading what would be sent finds out. A live run that goes on is
        // refused here.
        if self.ended().is_none() && self.live {
            self.notice = Some("P ships a run that has ended; this one has not".into());
        } else {
            self.notice = Some("reading what would be sent…".into());
            self.effects.push(Effect::ShipPreview);
        }
    }

    /// The preview was read: show it, or say why not.
    pub fn ship_previewed(&mut self, preview: Result<Preview, String>) {
        match preview {
            Ok(p) => {
                self.notice = None;
                self.views.only(ShipOffer::new(p));
            }
            Err(why) => self.notice = Some(format!("cannot ship: {why}")),
        }
    }

    /// It was sent: where it went, or why not.
    pub fn shipped(&mut self, outcome: Result<String, String>) {
        self.notice = Some(match outcome {
            Ok(said) => said,
            Err(why) => format!("not shipped: {why}"),
        });
    }
}
