/* commands.h — one entry point per subcommand, each in cli/cmd_NAME.c.
 * Each returns the process exit code: 0 success, 1 run failure, 2 bad usage
 * or bad input (after printing one "membound: error: ..." line). */
#ifndef MB_CLI_COMMANDS_H
#define MB_CLI_COMMANDS_H

int mb_cmd_devices(int argc, char **argv);
int mb_cmd_model(int argc, char **argv);
int mb_cmd_whatif(int argc, char **argv);
int mb_cmd_plan(int argc, char **argv);
int mb_cmd_gemm(int argc, char **argv);
int mb_cmd_attention(int argc, char **argv);
int mb_cmd_mlp(int argc, char **argv);
int mb_cmd_calibrate(int argc, char **argv);
int mb_cmd_measure(int argc, char **argv);
int mb_cmd_report(int argc, char **argv);
int mb_cmd_figures(int argc, char **argv);
int mb_cmd_demo(int argc, char **argv);
int mb_cmd_import(int argc, char **argv);
int mb_cmd_trace(int argc, char **argv);

#endif
