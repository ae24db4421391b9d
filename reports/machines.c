/* machines.c — one device per machine: rows measured on two machines whose
 * specs share a name (two nodes calibrated as "local-cpu", two H100 nodes
 * modelled on "h100-sxm", the same GPU model at other clocks or drivers)
 * are kept apart, each machine its own device, fit and verdicts. A
 * machine is what its CSV's provenance says: the host, and the CPU or the
 * GPU (name, PCI id, driver) measured there; rows of one machine under
 * several calibrations of one name stay one group (one fit), as before. Where two
 * machines share a name they become NAME@HOST (NAME#K where the hosts
 * agree too). Does not decide which spec models a row (join.c does). */
#include "report_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of provenance key of input fi ("host", "gpu", ...), or "". The
 * set keeps its provenance lines as "BASENAME: key: value" (csv.c). */
static const char *prov_value(const mb_rpt_set *s, int fi, const char *key, char *buf, size_t size)
{
    const char *base = strrchr(s->files[fi], '/');
    base = base ? base + 1 : s->files[fi];
    size_t bl = strlen(base), kl = strlen(key);
    buf[0] = '\0';
    for (int i = 0; i < s->n_prov; i++) {
        const char *p = s->prov[i];
        if (strncmp(p, base, bl) || strncmp(p + bl, ": ", 2) || strncmp(p + bl + 2, key, kl) ||
            strncmp(p + bl + 2 + kl, ": ", 2))
            continue;
        snprintf(buf, size, "%s", p + bl + 2 + kl + 2);
        break;
    }
    return buf;
}

void rpt_machine_of(const mb_rpt_set *s, int fi, char *host, size_t host_size, char *what, size_t what_size)
{
    char gpu[512], drv[512], cpu[512];
    prov_value(s, fi, "host", host, host_size);
    prov_value(s, fi, "gpu", gpu, sizeof gpu);
    prov_value(s, fi, "gpu_driver", drv, sizeof drv);
    prov_value(s, fi, "cpu", cpu, sizeof cpu);
    if (!host[0]) what[0] = '\0'; /* imported rows (ncu, the PyTorch profiler): no machine to tell apart */
    else if (gpu[0]) snprintf(what, what_size, "%s; %s", gpu, drv);
    else snprintf(what, what_size, "%s", cpu);
}

/* Per device: the machines seen (host and what), in order. */
typedef struct machine {
    char host[256], what[600];
} machine;

static int same_machine(const machine *a, const machine *b)
{
    return !strcmp(a->host, b->host) && !strcmp(a->what, b->what);
}

int rpt_machines_split(mb_rpt_set *s, mb_err *err)
{
    if (s->n_files == 0 || s->n_devices == 0) return MB_OK;
    machine *of_file = calloc((size_t)s->n_files, sizeof *of_file);
    machine dev_m[MB_RPT_MAX_DEVICES];
    int dev_seen[MB_RPT_MAX_DEVICES] = {0};
    if (!of_file) return mb_err_set(err, MB_ERUN, "out of memory");
    for (int fi = 0; fi < s->n_files; fi++)
        rpt_machine_of(s, fi, of_file[fi].host, sizeof of_file[fi].host, of_file[fi].what, sizeof of_file[fi].what);
    /* 1. a device measured on a second machine: a copy of it for that machine */
    int orig[MB_RPT_MAX_DEVICES];
    for (int d = 0; d < MB_RPT_MAX_DEVICES; d++) orig[d] = d;
    int rc = MB_OK;
    for (int i = 0; i < s->n_rows && !rc; i++) {
        mb_rpt_row *r = &s->rows[i];
        if (r->dev < 0) continue;
        const machine *m = &of_file[r->file_index];
        int d0 = orig[r->dev], found = -1;
        for (int d = 0; d < s->n_devices && found < 0; d++)
            if (orig[d] == d0 && dev_seen[d] && same_machine(&dev_m[d], m)) found = d;
        if (found < 0 && !dev_seen[r->dev]) found = r->dev;
        if (found < 0) {
            if (s->n_devices == MB_RPT_MAX_DEVICES) {
                rc = mb_err_set(err, MB_EINPUT, "%s:%d: more than %d devices (machines)", r->file, r->line,
                                MB_RPT_MAX_DEVICES);
                break;
            }
            found = s->n_devices++;
            s->devices[found] = s->devices[d0];
            char key[sizeof s->device_keys[0]];
            snprintf(key, sizeof key, "%.200s\x02%d", s->device_keys[d0], found);
            memcpy(s->device_keys[found], key, sizeof key);
            orig[found] = d0;
        }
        if (!dev_seen[found]) { dev_m[found] = *m; dev_seen[found] = 1; }
        r->dev = found;
    }
    /* 2. a name shared by devices of different machines: each machine's
     * NAME@HOST (NAME@HOST#K where one host has several, NAME#K without one) */
    for (int a = 0; a < s->n_devices; a++) {
        if (!dev_seen[a]) continue;
        int clash = 0;
        for (int b = 0; b < s->n_devices; b++)
            clash |= b != a && dev_seen[b] && !strcmp(s->devices[a].name, s->devices[b].name) &&
                     !same_machine(&dev_m[a], &dev_m[b]);
        if (!clash) continue;
        char base[sizeof s->devices[0].name];
        snprintf(base, sizeof base, "%s", s->devices[a].name);
        machine seen[MB_RPT_MAX_DEVICES];
        int ns = 0, of[MB_RPT_MAX_DEVICES], members[MB_RPT_MAX_DEVICES], nm = 0;
        for (int b = 0; b < s->n_devices; b++) {
            if (!dev_seen[b] || strcmp(s->devices[b].name, base)) continue;
            int m = -1;
            for (int j = 0; j < ns; j++) if (same_machine(&seen[j], &dev_m[b])) m = j;
            if (m < 0) { seen[ns] = dev_m[b]; m = ns++; }
            of[nm] = m;
            members[nm++] = b;
        }
        for (int j = 0; j < nm; j++) {
            const machine *m = &seen[of[j]];
            int same_host = 0;
            for (int q = 0; q < ns; q++) same_host += !strcmp(seen[q].host, m->host);
            char name[sizeof s->devices[0].name];
            if (!m->host[0]) snprintf(name, sizeof name, "%.50s#%d", base, of[j] + 1);
            else if (same_host > 1) snprintf(name, sizeof name, "%.27s@%.28s#%d", base, m->host, of[j] + 1);
            else snprintf(name, sizeof name, "%.30s@%.32s", base, m->host);
            memcpy(s->devices[members[j]].name, name, sizeof name);
        }
    }
    for (int d = 0; d < s->n_devices; d++)
        if (dev_seen[d]) snprintf(s->device_machines[d], sizeof s->device_machines[0], "%s%s%s",
                                  dev_m[d].host[0] ? dev_m[d].host : "host not recorded",
                                  dev_m[d].what[0] ? ": " : "", dev_m[d].what);
    free(of_file);
    return rc;
}
