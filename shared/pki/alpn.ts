/** ALPN names on the controller's agent port: one TLS listener, two directions. */
/** The agent calls the controller (gateway, enrollment, renewal). */
export const GATEWAY_ALPN = "h2";
/** The agent opened the socket, the controller is the HTTP/2 client on it (ADR 0021). */
export const REVERSE_ALPN = "clankie-reverse/1";
