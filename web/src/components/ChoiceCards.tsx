import type { KeyboardEvent, ReactNode } from 'react';

export interface Choice {
  value: string;
  title: ReactNode;
  /** Plain text for screen readers and tests (the title may be rich). */
  label: string;
  body?: ReactNode;
  disabled?: boolean;
  /** Why it cannot be chosen, shown on the card. */
  disabledReason?: string;
}

/**
 * A single choice among a few rich options (GPU models, sizes): a radio group drawn as cards,
 * because a plain select cannot show the specs and prices a buyer compares.
 */
export function ChoiceCards({ label, value, choices, onChange }: { label: string; value?: string; choices: Choice[]; onChange: (value: string) => void }) {
  function pick(choice: Choice) {
    if (!choice.disabled && choice.value !== value) onChange(choice.value);
  }
  function onKey(e: KeyboardEvent, choice: Choice) {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      pick(choice);
    }
  }
  return (
    <div className="choice-cards" role="radiogroup" aria-label={label}>
      {choices.map((choice) => {
        const selected = choice.value === value;
        return (
          <div
            key={choice.value}
            role="radio"
            aria-checked={selected}
            aria-disabled={choice.disabled || undefined}
            aria-label={choice.label}
            tabIndex={choice.disabled ? -1 : 0}
            className={`choice-card${selected ? ' is-selected' : ''}${choice.disabled ? ' is-disabled' : ''}`}
            onClick={() => pick(choice)}
            onKeyDown={(e) => onKey(e, choice)}
          >
            <div className="choice-card-title">{choice.title}</div>
            {choice.body && <div className="choice-card-body">{choice.body}</div>}
            {choice.disabled && choice.disabledReason && <div className="choice-card-reason">{choice.disabledReason}</div>}
          </div>
        );
      })}
    </div>
  );
}
