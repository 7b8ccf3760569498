# bash completion for prism.  Installed by `cmake --install` into
# share/bash-completion/completions/prism.  The commands and each command's
# options are read from prism's own --help, and configuration names from
# `prism list`, so this file never lists them (nothing here to go stale).

# The words of `prism list KIND` (first column).
_prism_names()
{
	"${1}" list "${2}" 2>/dev/null | while read -r name _; do printf '%s\n' "${name}"; done
}

_prism()
{
	local cur prev prism cmd i
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	prism=${COMP_WORDS[0]}
	cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*)
			cmd=${COMP_WORDS[i]}
			break
			;;
		esac
	done
	if [[ -z ${cmd} ]]; then
		# The commands: the indented first words of `prism --help`'s
		# "commands:" section.
		local cmds
		cmds=$("${prism}" --help 2>/dev/null |
			sed -n '/^commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p')
		COMPREPLY=($(compgen -W "${cmds} --help --version" -- "${cur}"))
		return
	fi
	case ${prev} in
	--hw | --base-hw) COMPREPLY=($(compgen -W "$(_prism_names "${prism}" hw)" -- "${cur}"))
		return ;;
	--export) COMPREPLY=($(compgen -W "megatron bridge torchtitan" -- "${cur}"))
		return ;;
	--model) COMPREPLY=($(compgen -W "$(_prism_names "${prism}" models)" -- "${cur}")
		$(compgen -f -- "${cur}"))
		return ;;
	esac
	if [[ ${cur} == -* ]]; then
		# The options: every "--long" at the start of a line of the
		# command's --help.
		local opts
		opts=$("${prism}" "${cmd}" --help 2>/dev/null |
			sed -n 's/^ *\(-[a-zA-Z0-9], \)\{0,1\}\(--[a-z0-9-]*\).*/\2/p' | sort -u)
		COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
		return
	fi
	case ${cmd} in
	list) COMPREPLY=($(compgen -W "models hw sweeps" -- "${cur}")) ;;
	synth | whatif) COMPREPLY=($(compgen -W "$(_prism_names "${prism}" models)" -- "${cur}")
		$(compgen -f -- "${cur}")) ;;
	search) COMPREPLY=($(compgen -W "$(_prism_names "${prism}" sweeps)" -- "${cur}")
		$(compgen -f -- "${cur}")) ;;
	*) COMPREPLY=($(compgen -f -- "${cur}")) ;;
	esac
}
complete -o filenames -F _prism prism
