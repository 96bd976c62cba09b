//! Content-Based Router, Message Filter, Recipient List and Wire Tap. Arrive with the routing
//! issue.
