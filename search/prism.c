/* prism.c - main(): dispatch to subcommands. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "usage.h"

static const char usage[] =
    "usage: prism <command> [options]\n"
    "\n"
    "prism predicts LLM training iteration time for parallel layouts nobody has\n"
    "run yet, from a PyTorch profiler (Kineto) trace of a run that was.\n"
    "\n"
    "commands:\n"
    "  ingest TRACE... [-o GRAPH]   read Kineto traces (one per rank) into an\n"
    "                               execution graph; print a summary; save it\n"
    "  replay TRACE...|GRAPH        simulate the traced run; predicted against\n"
    "                               measured iteration times, breakdown,\n"
    "                               critical path, --timeline for Perfetto\n"
    "  calibrate TRACE...|GRAPH     fit each kernel class's efficiency on the\n"
    "                               trace's own kernels; leave-one-out errors\n"
    "  kernels CSV...|DIR           the kernel model against measured kernel\n"
    "                               times; --fit its parameters on them\n"
    "  collectives CSV...|DIR       the collective model against measured\n"
    "                               collectives; --fit the profiles' bus\n"
    "                               efficiencies and latencies on them\n"
    "  synth MODEL --hw HW [-o T]   a run's graph from its shape and layout;\n"
    "                               predict it; write it as Kineto traces\n"
    "  whatif BASE [--dp N ...]     one candidate layout against a base run\n"
    "                               (a trace, a graph or a model)\n"
    "  search SWEEP                 a sweep of layouts into a SQLite database\n"
    "                               (resumable; screened, OpenMP-parallel)\n"
    "  report DB                    best layout per GPU count, Pareto fronts:\n"
    "                               Markdown, CSV, SVG chart\n"
    "  list [models|hw|sweeps]      the configurations that ship, one line each\n"
    "\n"
    "Run `prism <command> --help` for a command's options.\n"
    "  -h, --help      this help\n"
    "  -V, --version   print the version\n";

int main(int argc, char **argv)
{
	static const char *const commands[] = {"ingest", "replay",  "calibrate",  "synth",
					       "whatif", "search",  "report",	  "list",
					       "help",	 "kernels", "collectives"};
	int k;

	/* Lines in the order they were written when stdout and stderr share a
	 * file or pipe (2>&1 | less, a CI log): fully buffered, a table's
	 * second half came out after the messages that followed it. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Each command says what was wrong with an option (usage.h). */
	opterr = 0;
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("prism %s\n", PRISM_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "ingest") == 0)
		return cmd_ingest(argc - 1, argv + 1);
	if (strcmp(argv[1], "replay") == 0)
		return cmd_replay(argc - 1, argv + 1);
	if (strcmp(argv[1], "calibrate") == 0)
		return cmd_calibrate(argc - 1, argv + 1);
	if (strcmp(argv[1], "kernels") == 0)
		return cmd_kernels(argc - 1, argv + 1);
	if (strcmp(argv[1], "collectives") == 0)
		return cmd_collectives(argc - 1, argv + 1);
	if (strcmp(argv[1], "synth") == 0)
		return cmd_synth(argc - 1, argv + 1);
	if (strcmp(argv[1], "whatif") == 0)
		return cmd_whatif(argc - 1, argv + 1);
	if (strcmp(argv[1], "search") == 0)
		return cmd_search(argc - 1, argv + 1);
	if (strcmp(argv[1], "report") == 0)
		return cmd_report(argc - 1, argv + 1);
	if (strcmp(argv[1], "list") == 0)
		return cmd_list(argc - 1, argv + 1);
	k = usage_closest(argv[1], commands, (int)(sizeof(commands) / sizeof(commands[0])));
	if (k >= 0)
		fprintf(stderr, "prism: unknown command '%s'; did you mean %s? (prism --help)\n",
			argv[1], commands[k]);
	else
		fprintf(stderr, "prism: unknown command '%s' (prism --help)\n", argv[1]);
	return EXIT_USAGE;
}
