/* sleef_rates.c — the SLEEF calls of membound's compiled kernels (Debian's
 * libsleef) against the ones Inductor's vector code calls (PyTorch's copy, in
 * libtorch_cpu.so): ns per element, one thread, L1-resident, thread CPU time
 * (a shared host's load does not enter it); the second of two passes counts.
 * usage: gcc -O2 -march=native bench/sleef_rates.c -o /tmp/sleef_rates -lsleef -ldl &&
 *        /tmp/sleef_rates build/bench-venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so
 * AVX-512 only. Does not time memory (cpu_peers.py does). */
#define _GNU_SOURCE
#include <immintrin.h>
#include <sleef.h>
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
typedef __m512 (*f1)(__m512);
static double cpu(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+1e-9*t.tv_nsec;}
#define N 4096
#define R 4000
float a[N] __attribute__((aligned(64))), o[N] __attribute__((aligned(64)));
/* the lecture's tanh-GELU as Inductor's kernel orders it: 0.5x (1 + tanh(0.7978845608 (x + 0.044715 x^3))) */
static __m512 gelu(__m512 x, f1 th){
  __m512 u=_mm512_mul_ps(_mm512_add_ps(x,_mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(x,x),x),_mm512_set1_ps(0.044715f))),_mm512_set1_ps(0.7978845608f));
  return _mm512_mul_ps(_mm512_mul_ps(x,_mm512_set1_ps(0.5f)),_mm512_add_ps(th(u),_mm512_set1_ps(1.0f)));}
int main(int argc, char **argv){
  for(int i=0;i<N;i++) a[i]=-2+4.0f*i/N;
  void *h=argc>1?dlopen(argv[1],RTLD_NOW|RTLD_LOCAL):0;
  if(argc>1&&!h){printf("dlopen %s\n",dlerror());}
  f1 tsin=h?(f1)dlsym(h,"Sleef_sinf16_u10"):0, tcos=h?(f1)dlsym(h,"Sleef_cosf16_u10"):0,
     tsin35=h?(f1)dlsym(h,"Sleef_sinf16_u35"):0, tcos35=h?(f1)dlsym(h,"Sleef_cosf16_u35"):0, ttanh=h?(f1)dlsym(h,"Sleef_tanhf16_u10"):0, texp=h?(f1)dlsym(h,"Sleef_expf16_u10"):0;
  double t;
  for(int rep=0;rep<2;rep++){
  t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); Sleef___m512_2 p=Sleef_sincosf16_u10(x); _mm512_store_ps(o+i,_mm512_add_ps(_mm512_mul_ps(p.x,p.x),_mm512_mul_ps(p.y,p.y)));} printf("debian sincos u10: %.3f ns/elem\n",(cpu()-t)/R/N*1e9);
  t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); __m512 s=Sleef_sinf16_u10(x),c=Sleef_cosf16_u10(x); _mm512_store_ps(o+i,_mm512_add_ps(_mm512_mul_ps(s,s),_mm512_mul_ps(c,c)));} printf("debian sin+cos u10: %.3f\n",(cpu()-t)/R/N*1e9);
  if(tsin){ t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); __m512 s=tsin(x),c=tcos(x); _mm512_store_ps(o+i,_mm512_add_ps(_mm512_mul_ps(s,s),_mm512_mul_ps(c,c)));} printf("torch sin+cos u10: %.3f\n",(cpu()-t)/R/N*1e9);}
  t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); Sleef___m512_2 p=Sleef_sincosf16_u35(x); _mm512_store_ps(o+i,_mm512_add_ps(_mm512_mul_ps(p.x,p.x),_mm512_mul_ps(p.y,p.y)));} printf("debian sincos u35: %.3f\n",(cpu()-t)/R/N*1e9);
  if(tsin35){ t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); __m512 s=tsin35(x),c=tcos35(x); _mm512_store_ps(o+i,_mm512_add_ps(_mm512_mul_ps(s,s),_mm512_mul_ps(c,c)));} printf("torch sin+cos u35 (Inductor's): %.3f\n",(cpu()-t)/R/N*1e9);}
  t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); _mm512_store_ps(o+i,Sleef_tanhf16_u10(x));} printf("debian tanh u10: %.3f\n",(cpu()-t)/R/N*1e9);
  t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); _mm512_store_ps(o+i,Sleef_tanhf16_u35(x));} printf("debian tanh u35 (membound's): %.3f\n",(cpu()-t)/R/N*1e9);
  t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); _mm512_store_ps(o+i,gelu(x,Sleef_tanhf16_u10));} printf("debian gelu_tanh with tanh u10: %.3f\n",(cpu()-t)/R/N*1e9);
  t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); _mm512_store_ps(o+i,gelu(x,Sleef_tanhf16_u35));} printf("debian gelu_tanh with tanh u35: %.3f\n",(cpu()-t)/R/N*1e9);
  if(ttanh){ t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); _mm512_store_ps(o+i,gelu(x,ttanh));} printf("torch gelu_tanh with tanh u10 (Inductor's): %.3f\n",(cpu()-t)/R/N*1e9);}
  if(ttanh){ t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); _mm512_store_ps(o+i,ttanh(x));} printf("torch tanh u10: %.3f\n",(cpu()-t)/R/N*1e9);}
  t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); _mm512_store_ps(o+i,Sleef_expf16_u10(x));} printf("debian exp u10: %.3f\n",(cpu()-t)/R/N*1e9);
  if(texp){ t=cpu(); for(int r=0;r<R;r++) for(int i=0;i<N;i+=16){__m512 x=_mm512_load_ps(a+i); _mm512_store_ps(o+i,texp(x));} printf("torch exp u10: %.3f\n",(cpu()-t)/R/N*1e9);}
  }
  return o[5]>100;
}
