/*
 * libFuzzer target: the perf record decoder (daemon/sample.c). Input: 8 bytes of sample_type
 * (masked to the bits the decoder supports, so every input reaches the field walk), then one perf
 * record, header included. The header's size is forced to the bytes that follow, which is the
 * decoder's precondition (the ring reader and the recording reader guarantee it); everything else
 * is the fuzzer's: type, misc, callchain lengths, RAW sizes. Whatever the decoder accepts must
 * stay inside the record, which ASan checks by reading every byte it points at.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"

static volatile uint64_t sink;

/* Touches every byte @s points into, so an out-of-bounds pointer is an ASan report here. */
static void touch(const struct mm_sample *s)
{
	uint64_t acc = s->id ^ s->ip ^ s->pid ^ s->tid ^ s->time_ns ^ s->cpu;
	for (uint64_t i = 0; i < s->nr_ips; i++) {
		uint64_t v;
		memcpy(&v, &s->ips[i], 8);
		acc += v;
	}
	for (uint32_t i = 0; i < s->raw_size; i++)
		acc += ((const uint8_t *)s->raw)[i];
	sink = acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t sample_type;
	struct mm_sample s;

	if (size < 8 + sizeof(struct perf_event_header) || size - 8 > UINT16_MAX)
		return 0;
	memcpy(&sample_type, data, 8);
	sample_type &= MM_SAMPLE_SUPPORTED;
	size -= 8;
	/* An exact-size heap copy: ASan catches a read one byte past the record. The ring and the
	 * recording reader give 8-byte aligned records; malloc does too. */
	struct perf_event_header *hdr = malloc(size);
	if (!hdr)
		return 0;
	memcpy(hdr, data + 8, size);
	hdr->size = (uint16_t)size;

	if (mm_sample_parse(hdr, sample_type, &s) == 0) {
		touch(&s);
		/* A record the full parse accepts has the time the quick path finds. */
		if ((sample_type & PERF_SAMPLE_TIME) &&
		    mm_record_time(hdr, sample_type) != s.time_ns)
			abort();
	}
	if (mm_sample_id_parse(hdr, sample_type, &s) == 0)
		touch(&s);
	sink ^= mm_record_time(hdr, sample_type);
	free(hdr);
	return 0;
}
