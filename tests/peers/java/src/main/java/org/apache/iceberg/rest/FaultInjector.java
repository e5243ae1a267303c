// SPDX-License-Identifier: Apache-2.0
//
// Fault-injecting wrapper around the UNMODIFIED Iceberg REST catalog server.
//
// FaultInjector is a servlet Filter that LoopbackCatalogServer mounts in front of Iceberg's own
// RESTCatalogServlet (RESTServerCatalogAdapter + JdbcCatalog). It never implements catalog
// behaviour: a request either goes to the real servlet untouched, or is answered/dropped here
// WITHOUT reaching it, or goes to the real servlet and has its real answer replaced or dropped.
// With empty queues every request passes straight through (chain.doFilter with the original
// request and response), so the server behaves exactly like the plain launcher.
//
// Control endpoint (a path no Iceberg route uses; the real server answers 400 "No route" there):
//   POST   /__faults  {"commit": [KIND...], "load": [KIND...], "table": "ns.t" | null,
//                     "reset_counters": false}
//          REPLACES both queues and the table filter (a missing queue becomes empty);
//          counters are kept unless "reset_counters" is true. Unknown keys/kinds -> 400.
//   GET    /__faults  remaining queues, table filter, counters and recent events (see state()).
//   DELETE /__faults  clears queues, table filter, counters and the event log.
// All three answer the state as JSON.
//
// Matching (with Iceberg's own router, Route.from, exactly as the servlet routes):
//   "commit" = UPDATE_TABLE  POST /v1/namespaces/{ns}/tables/{table}
//   "load"   = LOAD_TABLE    GET  /v1/namespaces/{ns}/tables/{table}
// Each matching request (to the filtered table, if "table" is set) pops the head of its queue, so
// faults apply to consecutive matching requests in order; requests to other tables or routes
// neither consume faults nor are affected.
//
// Kinds:
//   pass                          handle normally (a placeholder to skip a request in a sequence;
//                                 counted in "matched", not in "injected")
//   conflict                      not applied; 409 CommitFailedException
//   error-500|502|503|504         not applied; that status with an IcebergErrorResponse body
//   stale-400                     not applied; 400 ValidationException "Cannot add a snapshot,
//                                 first-row-id is behind table next-row-id: 0 < 5" (pre-1.11 servers)
//   lost-response                 APPLIED by the real server, then 500 CommitStateUnknownException
//                                 instead of the real answer
//   reset                         APPLIED by the real server, then the TCP connection is reset
//                                 (RST, no HTTP response at all)
//   reset-before                  not applied; the TCP connection is reset
//   delay-<ms>                    sleep <ms> (0..600000), then handle normally
// Error bodies are built the way the adapter builds its own: the exception goes through
// RESTCatalogAdapter.configureResponseFromException (the adapter's exception -> status/type
// mapping) and is serialised with Iceberg's RESTObjectMapper, like RESTCatalogServlet.handle().
//
// Faults that do not reach the real servlet never reach CatalogHandlers.withIdempotency either,
// so an Idempotency-Key sent with them is NOT recorded; lost-response/reset do record it.
package org.apache.iceberg.rest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.StandardSocketOptions;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.rest.HTTPRequest.HTTPMethod;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.util.Pair;
import org.eclipse.jetty.ee10.servlet.ServletChannel;
import org.eclipse.jetty.ee10.servlet.ServletContextRequest;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.io.EofException;
import org.eclipse.jetty.io.SocketChannelEndPoint;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class FaultInjector implements Filter {
  private static final Logger LOG = LoggerFactory.getLogger(FaultInjector.class);

  /** Path of the control endpoint, as seen by RESTCatalogServlet (leading "/" included). */
  public static final String CONTROL_PATH = "/__faults";

  static final String COMMIT = "commit";
  static final String LOAD = "load";

  /** Same value as RESTCatalogAdapter.NAMESPACE_SEPARATOR_URLENCODED_UTF_8 (the config override). */
  private static final String NAMESPACE_SEPARATOR = "%2E";

  private static final Pattern DELAY = Pattern.compile("delay-(\\d{1,9})");
  private static final long MAX_DELAY_MS = 600_000L;
  private static final List<String> KINDS =
      List.of(
          "pass",
          "conflict",
          "error-500",
          "error-502",
          "error-503",
          "error-504",
          "stale-400",
          "lost-response",
          "reset",
          "reset-before");
  private static final List<String> CONTROL_KEYS = List.of(COMMIT, LOAD, "table", "reset_counters");
  private static final int MAX_EVENTS = 200;

  static final String STALE_MESSAGE =
      "Cannot add a snapshot, first-row-id is behind table next-row-id: 0 < 5";

  private final ObjectMapper json = new ObjectMapper();

  // All state below is guarded by "this".
  private final Deque<String> commitQueue = new ArrayDeque<>();
  private final Deque<String> loadQueue = new ArrayDeque<>();
  private String tableFilter;
  private final Map<String, Long> injected = new LinkedHashMap<>();
  private final Map<String, Long> matched = new LinkedHashMap<>();
  private final Deque<Map<String, Object>> events = new ArrayDeque<>();

  @Override
  public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
      throws IOException, ServletException {
    HttpServletRequest request = (HttpServletRequest) req;
    HttpServletResponse response = (HttpServletResponse) res;

    if (CONTROL_PATH.equals(request.getRequestURI())) {
      control(request, response);
      return;
    }

    Match match = match(request);
    String kind = match == null ? null : next(match);
    if (kind == null || kind.equals("pass")) {
      chain.doFilter(req, res);
      return;
    }

    LOG.info("fault injected: {} on {} {} ({})", kind, match.queue, match.table,
        request.getMethod() + " " + request.getRequestURI());
    Matcher delay = DELAY.matcher(kind);
    if (delay.matches()) {
      sleep(Long.parseLong(delay.group(1)));
      record(match, kind, null);
      chain.doFilter(req, res);
      return;
    }

    switch (kind) {
      case "conflict":
        record(match, kind, null);
        sendError(response,
            fromException(new CommitFailedException(
                "Commit failed: fault injected (conflict) on %s; nothing was applied",
                match.table)));
        return;
      case "stale-400":
        record(match, kind, null);
        sendError(response, fromException(new ValidationException(STALE_MESSAGE)));
        return;
      case "error-500":
      case "error-502":
      case "error-503":
      case "error-504":
        record(match, kind, null);
        sendError(response, statusError(match, Integer.parseInt(kind.substring(6))));
        return;
      case "reset-before":
        record(match, kind, null);
        resetConnection(request, kind);
        return;
      case "lost-response":
      case "reset":
        {
          // Let the real server handle the request completely, into a response that goes nowhere.
          DiscardedResponse hidden = new DiscardedResponse();
          try {
            chain.doFilter(req, hidden);
          } finally {
            record(match, kind, hidden.status);
            LOG.info("fault {}: real answer {} dropped: {}", kind, hidden.status, hidden.bodyText());
          }
          if (kind.equals("reset")) {
            resetConnection(request, kind);
          } else {
            sendError(response,
                fromException(new CommitStateUnknownException(
                    new RuntimeException(
                        "Fault injected (lost-response): the request was processed by the server"
                            + " but its response was lost"))));
          }
          return;
        }
      default:
        throw new IllegalStateException("unvalidated fault kind: " + kind);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // matching and queues

  private static final class Match {
    final String queue;
    final String table;
    final String idempotencyKey;

    Match(String queue, String table, String idempotencyKey) {
      this.queue = queue;
      this.table = table;
      this.idempotencyKey = idempotencyKey;
    }
  }

  /** Routes like RESTCatalogServlet (Route.from on the URI without its leading "/"). */
  static Match match(HttpServletRequest request) {
    HTTPMethod method;
    if ("GET".equals(request.getMethod())) {
      method = HTTPMethod.GET;
    } else if ("POST".equals(request.getMethod())) {
      method = HTTPMethod.POST;
    } else {
      return null;
    }
    String uri = request.getRequestURI();
    if (uri == null || uri.isEmpty()) {
      return null;
    }
    Pair<Route, Map<String, String>> route = Route.from(method, uri.substring(1));
    if (route == null) {
      return null;
    }
    String queue;
    if (route.first() == Route.UPDATE_TABLE) {
      queue = COMMIT;
    } else if (route.first() == Route.LOAD_TABLE) {
      queue = LOAD;
    } else {
      return null;
    }
    String table;
    try {
      table = TableIdentifier.of(
              RESTUtil.decodeNamespace(route.second().get("namespace"), NAMESPACE_SEPARATOR),
              RESTUtil.decodeString(route.second().get("table")))
          .toString();
    } catch (RuntimeException e) {
      // Malformed identifier: the real server will answer it; never inject on it.
      return null;
    }
    return new Match(queue, table, request.getHeader(RESTUtil.IDEMPOTENCY_KEY_HEADER));
  }

  /** Pops the fault for this request, or null to pass it through. */
  private synchronized String next(Match match) {
    if (tableFilter != null && !tableFilter.equals(match.table)) {
      return null;
    }
    matched.merge(match.queue, 1L, Long::sum);
    Deque<String> queue = match.queue.equals(COMMIT) ? commitQueue : loadQueue;
    return queue.pollFirst();
  }

  private synchronized void record(Match match, String kind, Integer hiddenStatus) {
    injected.merge(kind, 1L, Long::sum);
    Map<String, Object> event = new LinkedHashMap<>();
    event.put("queue", match.queue);
    event.put("table", match.table);
    event.put("kind", kind);
    if (hiddenStatus != null) {
      event.put("hidden-status", hiddenStatus);
    }
    event.put("idempotency-key", match.idempotencyKey);
    event.put("time-ms", System.currentTimeMillis());
    events.addLast(event);
    while (events.size() > MAX_EVENTS) {
      events.removeFirst();
    }
  }

  static boolean validKind(String kind) {
    if (KINDS.contains(kind)) {
      return true;
    }
    Matcher m = DELAY.matcher(kind);
    return m.matches() && Long.parseLong(m.group(1)) <= MAX_DELAY_MS;
  }

  // ---------------------------------------------------------------------------------------------
  // control endpoint

  private void control(HttpServletRequest request, HttpServletResponse response)
      throws IOException {
    switch (request.getMethod()) {
      case "GET":
        break;
      case "DELETE":
        synchronized (this) {
          commitQueue.clear();
          loadQueue.clear();
          tableFilter = null;
          injected.clear();
          matched.clear();
          events.clear();
        }
        LOG.info("faults cleared");
        break;
      case "POST":
        {
          String error = replace(request);
          if (error != null) {
            ObjectNode body = json.createObjectNode();
            body.put("error", error);
            writeJson(response, 400, body);
            return;
          }
          break;
        }
      default:
        response.setHeader("Allow", "GET, POST, DELETE");
        ObjectNode body = json.createObjectNode();
        body.put("error", "method not allowed: " + request.getMethod());
        writeJson(response, 405, body);
        return;
    }
    writeJson(response, 200, state());
  }

  /** Parses and applies a POST body; returns an error message, or null on success. */
  private String replace(HttpServletRequest request) throws IOException {
    JsonNode body;
    try {
      body = json.readTree(request.getInputStream());
    } catch (IOException e) {
      return "body is not JSON: " + e.getMessage();
    }
    if (body == null || body.isMissingNode() || body.isNull()) {
      body = json.createObjectNode();
    }
    if (!body.isObject()) {
      return "body must be a JSON object";
    }
    for (Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!CONTROL_KEYS.contains(key)) {
        return "unknown key: " + key + " (expected one of " + CONTROL_KEYS + ")";
      }
    }
    List<String> commit = new ArrayList<>();
    List<String> load = new ArrayList<>();
    for (String q : List.of(COMMIT, LOAD)) {
      JsonNode list = body.get(q);
      if (list == null || list.isNull()) {
        continue;
      }
      if (!list.isArray()) {
        return "\"" + q + "\" must be an array of fault kinds";
      }
      for (JsonNode k : list) {
        if (!k.isTextual() || !validKind(k.asText())) {
          return "unknown fault kind in \"" + q + "\": " + k
              + " (expected one of " + KINDS + " or delay-<ms>, ms <= " + MAX_DELAY_MS + ")";
        }
        (q.equals(COMMIT) ? commit : load).add(k.asText());
      }
    }
    String table = null;
    JsonNode t = body.get("table");
    if (t != null && !t.isNull()) {
      if (!t.isTextual() || t.asText().isEmpty()) {
        return "\"table\" must be a non-empty string like \"ns.t\" or null";
      }
      table = t.asText();
    }
    JsonNode reset = body.get("reset_counters");
    if (reset != null && !reset.isNull() && !reset.isBoolean()) {
      return "\"reset_counters\" must be a boolean";
    }
    synchronized (this) {
      commitQueue.clear();
      commitQueue.addAll(commit);
      loadQueue.clear();
      loadQueue.addAll(load);
      tableFilter = table;
      if (reset != null && reset.asBoolean(false)) {
        injected.clear();
        matched.clear();
        events.clear();
      }
    }
    LOG.info("faults set: commit={} load={} table={}", commit, load, table);
    return null;
  }

  /**
   * {"commit": [...remaining], "load": [...remaining], "table": "ns.t"|null,
   *  "injected": {kind: count}, "matched": {"commit": n, "load": n}, "events": [...]}.
   * "matched" counts requests that matched a queue (and the table filter), faulted or not.
   * "events" lists the last 200 injections, oldest first: {"queue", "table", "kind",
   * "hidden-status" (lost-response/reset only: status of the real answer that was dropped),
   * "idempotency-key" (the request's Idempotency-Key header or null), "time-ms"}.
   */
  private synchronized ObjectNode state() {
    ObjectNode out = json.createObjectNode();
    ArrayNode c = out.putArray(COMMIT);
    commitQueue.forEach(c::add);
    ArrayNode l = out.putArray(LOAD);
    loadQueue.forEach(l::add);
    out.put("table", tableFilter);
    ObjectNode inj = out.putObject("injected");
    injected.forEach(inj::put);
    ObjectNode m = out.putObject("matched");
    m.put(COMMIT, matched.getOrDefault(COMMIT, 0L));
    m.put(LOAD, matched.getOrDefault(LOAD, 0L));
    out.set("events", json.valueToTree(new ArrayList<>(events)));
    return out;
  }

  private void writeJson(HttpServletResponse response, int status, JsonNode body)
      throws IOException {
    byte[] bytes = json.writeValueAsBytes(body);
    response.setStatus(status);
    response.setContentType("application/json");
    response.setContentLength(bytes.length);
    response.getOutputStream().write(bytes);
  }

  // ---------------------------------------------------------------------------------------------
  // fault actions

  /** The adapter's own exception mapping (status from EXCEPTION_ERROR_CODES, type, message). */
  private static ErrorResponse fromException(RuntimeException e) {
    ErrorResponse.Builder builder = ErrorResponse.builder();
    RESTCatalogAdapter.configureResponseFromException(e, builder);
    return builder.build();
  }

  /** error-5xx: statuses the adapter never produces itself (only 500), so built directly. */
  private static ErrorResponse statusError(Match match, int status) {
    String type;
    switch (status) {
      case 500:
        type = match.queue.equals(COMMIT) ? "CommitStateUnknownException" : "ServiceFailureException";
        break;
      case 502:
        type = "BadGatewayException";
        break;
      case 503:
        type = "ServiceUnavailableException";
        break;
      case 504:
        type = "GatewayTimeoutException";
        break;
      default:
        type = "RESTException";
    }
    return ErrorResponse.builder()
        .responseCode(status)
        .withType(type)
        .withMessage(String.format(Locale.ROOT,
            "Fault injected (error-%d) on %s %s; nothing was applied", status, match.queue,
            match.table))
        .build();
  }

  /** Writes an error as RESTCatalogServlet.handle() does. */
  private static void sendError(HttpServletResponse response, ErrorResponse error)
      throws IOException {
    response.setStatus(error.code());
    response.setHeader("Content-Type", "application/json");
    RESTObjectMapper.mapper().writeValue(response.getWriter(), error);
  }

  /**
   * Drops the connection without any HTTP response: SO_LINGER 0 turns the close into a TCP RST,
   * and aborting the Jetty channel makes Jetty close the endpoint instead of completing the
   * response (so not even a status line is written).
   */
  private static void resetConnection(HttpServletRequest request, String kind) throws IOException {
    ServletChannel channel = ServletContextRequest.getServletContextRequest(request).getServletChannel();
    EndPoint endPoint = channel.getEndPoint();
    if (endPoint instanceof SocketChannelEndPoint) {
      try {
        ((SocketChannelEndPoint) endPoint).getChannel().setOption(StandardSocketOptions.SO_LINGER, 0);
      } catch (IOException | UnsupportedOperationException e) {
        LOG.warn("fault {}: cannot set SO_LINGER 0 (the close will be a FIN): {}", kind, e.toString());
      }
    }
    channel.abort(new EofException("fault injected: " + kind));
    endPoint.close();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * A response that records status and body and sends nothing: the real servlet's answer for a
   * request whose response is to be "lost". Nothing written to it reaches the client.
   */
  private static final class DiscardedResponse implements HttpServletResponse {
    int status = SC_OK;
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private final Map<String, List<String>> headers = new LinkedHashMap<>();
    private final ServletOutputStream out =
        new ServletOutputStream() {
          @Override
          public boolean isReady() {
            return true;
          }

          @Override
          public void setWriteListener(WriteListener listener) {}

          @Override
          public void write(int b) {
            body.write(b);
          }

          @Override
          public void write(byte[] b, int off, int len) {
            body.write(b, off, len);
          }
        };
    private PrintWriter writer;
    private String contentType;
    private String encoding = "UTF-8";
    private Locale locale = Locale.ROOT;

    String bodyText() {
      if (writer != null) {
        writer.flush();
      }
      String s = body.toString(StandardCharsets.UTF_8);
      return s.length() > 300 ? s.substring(0, 300) + "..." : s;
    }

    @Override public void addCookie(Cookie cookie) {}
    @Override public boolean containsHeader(String name) {
      return headers.containsKey(name.toLowerCase(Locale.ROOT));
    }
    @Override public String encodeURL(String url) {
      return url;
    }
    @Override public String encodeRedirectURL(String url) {
      return url;
    }
    @Override public void sendError(int sc, String msg) {
      status = sc;
    }
    @Override public void sendError(int sc) {
      status = sc;
    }
    @Override public void sendRedirect(String location) {
      status = SC_FOUND;
    }
    @Override public void setDateHeader(String name, long date) {
      setHeader(name, Long.toString(date));
    }
    @Override public void addDateHeader(String name, long date) {
      addHeader(name, Long.toString(date));
    }
    @Override public void setHeader(String name, String value) {
      List<String> v = new ArrayList<>();
      v.add(value);
      headers.put(name.toLowerCase(Locale.ROOT), v);
    }
    @Override public void addHeader(String name, String value) {
      headers.computeIfAbsent(name.toLowerCase(Locale.ROOT), k -> new ArrayList<>()).add(value);
    }
    @Override public void setIntHeader(String name, int value) {
      setHeader(name, Integer.toString(value));
    }
    @Override public void addIntHeader(String name, int value) {
      addHeader(name, Integer.toString(value));
    }
    @Override public void setStatus(int sc) {
      status = sc;
    }
    @Override public int getStatus() {
      return status;
    }
    @Override public String getHeader(String name) {
      List<String> v = headers.get(name.toLowerCase(Locale.ROOT));
      return v == null || v.isEmpty() ? null : v.get(0);
    }
    @Override public Collection<String> getHeaders(String name) {
      return headers.getOrDefault(name.toLowerCase(Locale.ROOT), List.of());
    }
    @Override public Collection<String> getHeaderNames() {
      return headers.keySet();
    }
    @Override public String getCharacterEncoding() {
      return encoding;
    }
    @Override public String getContentType() {
      return contentType;
    }
    @Override public ServletOutputStream getOutputStream() {
      return out;
    }
    @Override public PrintWriter getWriter() {
      if (writer == null) {
        writer = new PrintWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8));
      }
      return writer;
    }
    @Override public void setCharacterEncoding(String charset) {
      encoding = charset;
    }
    @Override public void setContentLength(int len) {}
    @Override public void setContentLengthLong(long len) {}
    @Override public void setContentType(String type) {
      contentType = type;
    }
    @Override public void setBufferSize(int size) {}
    @Override public int getBufferSize() {
      return 0;
    }
    @Override public void flushBuffer() {}
    @Override public void resetBuffer() {
      body.reset();
    }
    @Override public boolean isCommitted() {
      return false;
    }
    @Override public void reset() {
      body.reset();
      headers.clear();
      status = SC_OK;
    }
    @Override public void setLocale(Locale loc) {
      locale = loc;
    }
    @Override public Locale getLocale() {
      return locale;
    }
  }
}
