/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The --gpu activity agent's shared library, carried as bytes (gpu_agent.h). */
	.section .rodata
	.balign 16
	.global specprobe_gpu_agent
	.type specprobe_gpu_agent, @object
specprobe_gpu_agent:
	.incbin "gpuagent/libspecprobe-gpu.so"
.Lspecprobe_gpu_agent_end:
	.size specprobe_gpu_agent, .Lspecprobe_gpu_agent_end - specprobe_gpu_agent
	.balign 8
	.global specprobe_gpu_agent_size
	.type specprobe_gpu_agent_size, @object
specprobe_gpu_agent_size:
	.quad .Lspecprobe_gpu_agent_end - specprobe_gpu_agent
	.size specprobe_gpu_agent_size, 8
	.section .note.GNU-stack, "", @progbits
