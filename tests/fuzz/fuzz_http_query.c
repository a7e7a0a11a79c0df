/*
 * libFuzzer target: the query parameters of /api/v1/history and /api/v1/locks (pid, since, until,
 * limit/top), as daemon/http.c parses them. Interim: http.c keeps these parsers static, so this
 * file includes it; it gives way to a target on the pure route parser once that exists. Input:
 * one byte choosing the route, then "key=value&key=value..." as libmicrohttpd would hand the
 * pairs over (already unescaped; a pair without '=' has a NULL value). A query is accepted with
 * finite, in-range values or refused with a message.
 */
#include <math.h>

#include "../../daemon/http.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct history_query q = {.pid = -1, .now = 1.7e9};
	char *text, *save = NULL;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		q.limit_key = "top";
		q.limit_max = LOCKS_TOP_MAX;
	} else {
		q.limit_key = "limit";
		q.limit_max = HISTORY_LIMIT_MAX;
	}
	q.until = q.now;
	text = strndup((const char *)data + 1, size - 1);
	if (!text)
		return 0;
	for (char *pair = strtok_r(text, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');
		if (eq)
			*eq = '\0';
		if (range_arg(&q, MHD_GET_ARGUMENT_KIND, pair, eq ? eq + 1 : NULL) != MHD_YES)
			break;
	}
	/* A refusal is a JSON string (reply_error() escapes it), so any byte may be quoted in it;
	 * an acceptance must be within the documented ranges. */
	if (!q.err[0] &&
	    (!isfinite(q.since) || !isfinite(q.until) || q.since < 0 || q.until < 0 ||
	     (q.seen & 1 && q.pid < 1) || (q.seen & 8 && (q.limit < 1 || q.limit > q.limit_max))))
		abort();
	free(text);
	return 0;
}
