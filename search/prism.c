/* prism.c - main(): dispatch to subcommands. */
#include <errno.h>
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "usage.h"

/* The commands: name, arguments and what it does (the usage's lines), and
 * its entry point. */
static const struct command {
	const char *name, *args, *help;
	int (*run)(int argc, char **argv);
} commands[] = {
    {"ingest", "TRACE... [-o GRAPH]",
     "read Kineto traces (one per rank) into an execution graph; print a summary; save it",
     cmd_ingest},
    {"replay", "TRACE...|GRAPH",
     "simulate the traced run; predicted against measured iteration times, breakdown, "
     "critical path, --timeline for Perfetto",
     cmd_replay},
    {"calibrate", "TRACE...|GRAPH",
     "fit each kernel class's efficiency on the trace's own kernels; leave-one-out errors",
     cmd_calibrate},
    {"kernels", "CSV...|DIR",
     "the kernel model against measured kernel times; --fit its parameters on them", cmd_kernels},
    {"collectives", "CSV...|DIR",
     "the collective model against measured collectives; --fit the profiles' bus "
     "efficiencies and latencies on them",
     cmd_collectives},
    {"synth", "MODEL --hw HW [-o T]",
     "a run's graph from its shape and layout; predict it; write it as Kineto traces", cmd_synth},
    {"describe", "TRACE --model M",
     "attach a run description (model and layout) to a trace, checked against it, so that "
     "whatif and search edit every knob",
     cmd_describe},
    {"whatif", "BASE [--dp N ...]",
     "one candidate layout against a base run (a trace, a graph or a model)", cmd_whatif},
    {"search", "SWEEP",
     "a sweep of layouts into a SQLite database (resumable; screened, multithreaded)", cmd_search},
    {"report", "DB", "best layout per GPU count, Pareto fronts: Markdown, CSV, SVG chart",
     cmd_report},
    {"list", "[models|hw|sweeps]", "the configurations that ship, one line each", cmd_list},
};
#define N_COMMANDS ((int)(sizeof(commands) / sizeof(commands[0])))

static void usage(FILE *f)
{
	fputs("usage: prism <command> [options]\n"
	      "\n"
	      "prism predicts LLM training iteration time for parallel layouts nobody has\n"
	      "run yet, from a PyTorch profiler (Kineto) trace of a run that was.\n"
	      "\n"
	      "commands:\n",
	      f);
	for (int i = 0; i < N_COMMANDS; i++) {
		char left[64];
		snprintf(left, sizeof(left), "  %s %s", commands[i].name, commands[i].args);
		fprintf(f, "%-31s", left);
		cli_wrap(f, commands[i].help, 31, 31);
	}
	fputs("\n"
	      "Run `prism <command> --help` for a command's options.\n"
	      "  -h, --help      this help\n"
	      "  -V, --version   print the version\n",
	      f);
}

/*
 * Standard output through a stream that keeps the first write error's
 * errno: stdio's error flag says that a write failed (a full disk, a
 * closed pipe), not why, and a report cut short must not exit 0.
 */
struct out {
	int err; /* the first failed write's errno, or 0 */
};

static ssize_t out_write(void *cookie, const char *buf, size_t n)
{
	struct out *o = cookie;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(STDOUT_FILENO, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!o->err)
				o->err = w < 0 ? errno : EIO;
			return done ? (ssize_t)done : -1;
		}
		done += (size_t)w;
	}
	return (ssize_t)n;
}

/* Standard output, the command's exit status rc: where anything written
 * to it was lost, exit 1 (unless rc says an earlier failure) saying why. */
static int out_close(struct out *o, int rc)
{
	int bad = fflush(stdout) != 0 || ferror(stdout);
	if (fclose(stdout) != 0)
		bad = 1;
	if (!bad && !o->err)
		return rc;
	fprintf(stderr, "prism: standard output: write failed: %s\n",
		strerror(o->err ? o->err : EIO));
	return rc ? rc : 1;
}

int main(int argc, char **argv)
{
	static const cookie_io_functions_t out_io = {NULL, out_write, NULL, NULL};
	const char *names[N_COMMANDS + 1];
	struct out o = {0};
	FILE *f;
	int k;

#ifdef __GLIBC__
	/* Every command builds graphs of flat arrays (tens to hundreds of MB)
	 * and frees them: glibc would map each large array afresh and return
	 * it on free, every page faulted in again by the next graph (a
	 * quarter of a large sweep's CPU, a third of one synth's: the system
	 * time, docs/PERFORMANCE.md).  Arrays up to glibc's largest threshold
	 * stay in one heap shared by the threads, and freed memory is kept for
	 * the next.  No command lives long past its work, so the memory held
	 * is the peak it needed anyway. */
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, INT32_MAX);
#endif
	if ((f = fopencookie(&o, "w", out_io)))
		stdout = f;
	/* Lines in the order they were written when stdout and stderr share a
	 * file or pipe (2>&1 | less, a CI log): fully buffered, a table's
	 * second half came out after the messages that followed it. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Each command says what was wrong with an option (usage.h). */
	opterr = 0;
	if (argc < 2) {
		usage(stderr);
		return out_close(&o, EXIT_USAGE);
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return out_close(&o, 0);
	}
	if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("prism %s\n", cli_version());
		return out_close(&o, 0);
	}
	for (k = 0; k < N_COMMANDS; k++) {
		if (strcmp(argv[1], commands[k].name) == 0)
			return out_close(&o, commands[k].run(argc - 1, argv + 1));
		names[k] = commands[k].name;
	}
	names[N_COMMANDS] = "help";
	k = usage_closest(argv[1], names, N_COMMANDS + 1);
	if (k >= 0)
		fprintf(stderr, "prism: unknown command '%s'; did you mean %s? (prism --help)\n",
			argv[1], names[k]);
	else
		fprintf(stderr, "prism: unknown command '%s' (prism --help)\n", argv[1]);
	return out_close(&o, EXIT_USAGE);
}
